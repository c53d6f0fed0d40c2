export { EngineError, runEngine, RunOptions, errorLine, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS } from './run';
export { EngineBudget, engineLimit, ENGINE_LIMITS, EngineLimit, engineOutputBytes, raiseEngineLimit } from './limits';
export { Engine, Engines, EngineOptions, EngineSource, MIN_VERSIONS, atLeast, describeEngines, parseVersion, resolveEngines } from './engines';
export { LAYER_PACKAGE, layerZip, unpackedLayer, UnpackedLayer } from './packaged';
export { workDir } from './workspace';
