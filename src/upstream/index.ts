export * from './footprint';
export * from './images';
export * from './releases';
export { ClusterRenders, parseOutput, renderApplications, RenderContext, RenderedSource, SourceType } from './render';
export { RenderCache, RenderOutput } from './render-cache';
export { DependencyNotVendored, locateChart, locateOverlay, renderableChart } from './chart';
export { conditionHolds, mergeValues } from './values';
export { valueAt } from '../json';
export { treeDigest } from './tree';
