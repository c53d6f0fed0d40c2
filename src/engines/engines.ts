import * as path from 'node:path';
import { isExecutableFile, LAYER_PACKAGE, unpackedLayer } from './packaged';
import { EngineError, runEngine, RunOptions } from './run';
import { workDir } from './workspace';
import { defaultCacheDir } from '../cache/compiled-cache';
import { fsErrorText, isFsError, stripControl } from '../errors';

/**
 * The versions of the pinned engines, those of the npm package LAYER_PACKAGE (its helm, and its kubectl's built-in
 * kustomize; test/engines checks them against the binaries): an engine on PATH is used only when it is at least as
 * new, else it is passed over (and said so) for the packaged one, so an older kustomize or helm on a machine never
 * renders what the pinned ones would render otherwise. Where the packaged engines cannot run (they are linux-x64
 * only), PATH must have engines at least this new.
 */
export const MIN_VERSIONS = { helm: '4.1.4', kustomize: '5.6.0' } as const;

/** Where an engine comes from. */
export type EngineSource = 'PATH' | 'package';

/** One engine: what runs it, its version, and how to call it. */
export interface Engine {
  readonly name: 'helm' | 'kustomize';
  /** The executable (kubectl for kustomize: `kubectl kustomize`). */
  readonly path: string;
  /** The engine's own version (`v4.1.4`; kustomize's, not kubectl's). */
  readonly version: string;
  /** kubectl's version, for kustomize through kubectl. */
  readonly via?: string;
  readonly source: EngineSource;
  /** Runs the engine with these arguments (kustomize: after `kubectl kustomize`). */
  run(args: readonly string[], opts?: RunOptions): Promise<string>;
}

/** The engines in use, and why an engine on PATH was passed over. */
export interface Engines {
  readonly helm: Engine;
  readonly kustomize: Engine;
  /** One line per engine on PATH that was not used (too old, or its version could not be read). */
  readonly passedOver: readonly string[];
}

export interface EngineOptions {
  /**
   * The search path for helm and kubectl.
   * @default process.env.PATH
   */
  readonly searchPath?: string;
  /**
   * Folder the packaged engines are unpacked into (`<cacheDir>/engines/`).
   * @default defaultCacheDir() (a per-process temporary folder when the cache is off)
   */
  readonly cacheDir?: string | false;
}

/** `[major, minor, patch]` of `v1.2.3`, `1.2.3-rc.1`, `v1.32.4-dispatcher`; undefined when there is none. */
export function parseVersion(v: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

/** True when `version` is at least `minimum` (major, minor, patch). */
export function atLeast(version: string, minimum: string): boolean {
  const a = parseVersion(version);
  const b = parseVersion(minimum)!;
  if (!a) return false;
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return true;
}

function onPath(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, name);
    if (isExecutableFile(p)) return p;
  }
  return undefined;
}

const PROBE = { timeoutMs: 20_000, maxOutputBytes: 1024 * 1024 };

/** A whole version string as engines print them (`v4.1.4`, `v1.32.4-dispatcher`, `v3.19.0+g3d8990f`): nothing else is taken. */
const VERSION = /^v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.+-]{1,64})?$/;

/** The answer of a version probe, shown in a message: control characters stripped, cut short. */
const shown = (text: string) => stripControl(text.trim()).slice(0, 80);

/** helm's version (`helm version --template {{.Version}}`). */
async function helmVersion(file: string, env: NodeJS.ProcessEnv): Promise<string> {
  const out = (await runEngine(file, ['version', '--template', '{{.Version}}'], { ...PROBE, env, label: 'helm version' })).trim();
  if (!VERSION.test(out)) throw new EngineError(`unexpected answer "${shown(out)}"`, 'helm version');
  return out;
}

/** kubectl's and its built-in kustomize's versions (`kubectl version --client -o json`). */
async function kubectlVersions(file: string, env: NodeJS.ProcessEnv): Promise<{ kubectl: string; kustomize: string }> {
  const out = await runEngine(file, ['version', '--client', '-o', 'json'], { ...PROBE, env, label: 'kubectl version' });
  let parsed: { clientVersion?: { gitVersion?: unknown }; kustomizeVersion?: unknown };
  try {
    parsed = JSON.parse(out) as typeof parsed;
  } catch {
    throw new EngineError(`unexpected answer "${shown(out)}"`, 'kubectl version');
  }
  const kubectl = typeof parsed.clientVersion?.gitVersion === 'string' && VERSION.test(parsed.clientVersion.gitVersion) ? parsed.clientVersion.gitVersion : '';
  const kustomize = typeof parsed.kustomizeVersion === 'string' ? parsed.kustomizeVersion : '';
  if (!VERSION.test(kustomize)) throw new EngineError(`no kustomize version in its answer (kubectl ${kubectl || '?'})`, 'kubectl version');
  return { kubectl, kustomize };
}

/**
 * The environment engines run in: this process's, with helm's cache, configuration and data folders
 * moved to a folder of their own, so a user's repositories, plugins or registry logins never change a render.
 */
function engineEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('HELM_')) delete env[k];
  return {
    ...env,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
}

function helmEngine(file: string, version: string, source: EngineSource, env: NodeJS.ProcessEnv): Engine {
  return { name: 'helm', path: file, version, source, run: (args, opts) => runEngine(file, args, { env, ...opts }) };
}

function kustomizeEngine(file: string, versions: { kubectl: string; kustomize: string }, source: EngineSource, env: NodeJS.ProcessEnv): Engine {
  return {
    name: 'kustomize',
    path: file,
    version: versions.kustomize,
    via: `kubectl ${versions.kubectl}`,
    source,
    run: (args, opts) => runEngine(file, ['kustomize', ...args], { env, label: 'kubectl kustomize', ...opts }),
  };
}

const resolved = new Map<string, Promise<Engines>>();

/** The engines (memoised per search path and cache folder for the life of the process). */
export function resolveEngines(opts: EngineOptions = {}): Promise<Engines> {
  const searchPath = opts.searchPath ?? process.env.PATH ?? '';
  const cacheDir = opts.cacheDir === false ? undefined : opts.cacheDir ?? defaultCacheDir();
  const key = JSON.stringify([searchPath, cacheDir]);
  let found = resolved.get(key);
  if (!found) {
    found = findEngines(searchPath, cacheDir);
    resolved.set(key, found);
    // a failure is not remembered: the next call tries again
    found.catch(() => resolved.delete(key));
  }
  return found;
}

/** An engine from PATH, or why the one there is passed over (undefined: none there). */
async function fromPath<T>(file: string | undefined, probe: (file: string) => Promise<T | string>): Promise<T | string | undefined> {
  if (!file) return undefined;
  try {
    return await probe(file);
  } catch (e) {
    return `${file}: ${(e as Error).message}`;
  }
}

async function findEngines(searchPath: string, cacheDir: string | undefined): Promise<Engines> {
  // helm's own folders: empty and private (one place, so nothing accumulates per run)
  let home: string;
  try {
    home = workDir(cacheDir, path.join('engines', 'helm-home'));
  } catch (e) {
    if (isFsError(e)) throw new EngineError(`no folder for helm's own files: ${fsErrorText(e)}`);
    throw e;
  }
  const env = engineEnv(home);
  const helmOnPath = onPath('helm', searchPath);
  const kubectlOnPath = onPath('kubectl', searchPath);
  // Without one of them on PATH the packaged ones are needed: start on them (hashing the zip) at once.
  const speculative = !helmOnPath || !kubectlOnPath ? unpackedLayer(cacheDir) : undefined;
  speculative?.catch(() => undefined);
  const [helmFound, kustomizeFound] = await Promise.all([
    fromPath(helmOnPath, async (file): Promise<Engine | string> => {
      const version = await helmVersion(file, env);
      return atLeast(version, MIN_VERSIONS.helm) ? helmEngine(file, version, 'PATH', env) : `${file} is helm ${version}, older than the pinned ${MIN_VERSIONS.helm}`;
    }),
    fromPath(kubectlOnPath, async (file): Promise<Engine | string> => {
      const v = await kubectlVersions(file, env);
      return atLeast(v.kustomize, MIN_VERSIONS.kustomize)
        ? kustomizeEngine(file, v, 'PATH', env)
        : `${file} is kubectl ${v.kubectl} with kustomize ${v.kustomize}, older than the pinned ${MIN_VERSIONS.kustomize}`;
    }),
  ]);
  const passedOver = [helmFound, kustomizeFound].filter((x): x is string => typeof x === 'string');
  let helm = typeof helmFound === 'object' ? helmFound : undefined;
  let kustomize = typeof kustomizeFound === 'object' ? kustomizeFound : undefined;
  if (!helm || !kustomize) {
    let layer;
    try {
      layer = await (speculative ?? unpackedLayer(cacheDir));
    } catch (e) {
      const missing = [!helm ? `helm >= ${MIN_VERSIONS.helm}` : '', !kustomize ? `kubectl with kustomize >= ${MIN_VERSIONS.kustomize}` : ''].filter(Boolean).join(' and ');
      throw new EngineError(`no ${missing} on PATH, and the packaged engines are unusable: ${(e as Error).message}`);
    }
    const [h, k] = await Promise.all([
      helm ? undefined : helmVersion(layer.helm, env),
      kustomize ? undefined : kubectlVersions(layer.kubectl, env),
    ]);
    helm ??= helmEngine(layer.helm, h!, 'package', env);
    kustomize ??= kustomizeEngine(layer.kubectl, k!, 'package', env);
  }
  return { helm, kustomize, passedOver };
}

/** One line per engine: name, version, path and where it comes from (for --help and the check report). */
export function describeEngines(e: Engines): string[] {
  const from = (x: Engine) => (x.source === 'PATH' ? 'from PATH' : `from the npm package ${LAYER_PACKAGE}`);
  return [
    `helm ${e.helm.version} (${e.helm.path}, ${from(e.helm)})`,
    `kustomize ${e.kustomize.version} (${e.kustomize.via}, ${e.kustomize.path}, ${from(e.kustomize)})`,
    ...e.passedOver.map((p) => `passed over: ${p}`),
  ].map(stripControl);
}
