import { lstatSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { COMPONENTS } from './components';
import { FromToolkit } from './plan';
import { readClusterFolder } from '../check/tree';
import { EngineError, runEngine } from '../engines/run';
import { InputError, printable } from '../errors';
import { scratchFolder } from '../files';
import { asInputError, decodeInput, parseInputYaml, readInputBytes } from '../input/read';
import { isJsonObject } from '../json';
import { ClusterModel } from '../model/model';
import { PACKAGE_NAME } from '../paths';

/** What either child may print: its pins are a few hundred bytes, synth --quiet prints nothing. */
const MAX_CHILD_OUTPUT = 1024 * 1024;

/** The other toolkit's render, in a scratch folder: call `dispose` when the plan is made. */
export interface LoadedToolkit extends FromToolkit {
  dispose(): void;
}

/** What the child that loads the other toolkit's versions module prints its pins after (its own output may come before). */
const PINS_MARKER = 'gpu-cluster-manifests-pins:';

/**
 * The child that reports the other toolkit's pins: it loads that toolkit's compiled versions module (in its own
 * process: whatever the module does, it does there) and prints, on a line of its own after PINS_MARKER, each
 * component's pinned version as JSON. Nothing of the module is trusted: the line is parsed and checked here.
 */
const PINS_SCRIPT = `const v = require(process.argv[1]).VERSIONS || {};
const keys = JSON.parse(process.argv[2]);
const pins = {};
for (const k of keys) pins[k] = v[k] && typeof v[k].version === 'string' ? v[k].version : null;
process.stdout.write('\\n${PINS_MARKER}' + JSON.stringify(pins) + '\\n');`;

/** A release as a toolkit pins it (`v26.3.3`, `0.18.6`, `26.1.2-rc.1`): anything else in the pins is not believed. */
const RELEASE = /^v?\d{1,6}\.\d{1,6}\.\d{1,6}(?:[-+][0-9A-Za-z.-]{1,64})?$/;

/** A regular file of the other toolkit (`lib/src/bin.js`), or why not. */
function toolkitFile(dir: string, rel: string): string | undefined {
  const file = path.join(dir, rel);
  return statSync(file, { throwIfNoEntry: false })?.isFile() ? file : undefined;
}

/**
 * The toolkit-to-toolkit form's old end: another installed version of this package (`npm install
 * gpu-cluster-manifests@0.1.0 --prefix /tmp/prev` -> /tmp/prev/node_modules/gpu-cluster-manifests, or a checkout of
 * it, built), its own `synth` of the same description into a scratch folder (its render of that cluster, as that
 * version wrote it), and the releases it pins (its compiled versions module). DIR is read as data: its package.json
 * through the bounded input reader; its code runs only as a child of its own, as an engine runs
 * (src/engines/run.ts): in its own process group, bounded in time, data memory and output, and ended with everything
 * it started, its output parsed and checked, never trusted. Anything that is not such a package, a child that fails
 * or is stopped by a bound, and what it prints that is not what was asked, is bad input naming --from-toolkit.
 */
export async function loadFromToolkit(dir: string, config: string, model: ClusterModel): Promise<LoadedToolkit> {
  const flag = `--from-toolkit ${dir}`;
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st) throw new InputError(`${flag}: no such folder`);
  if (!st.isDirectory()) throw new InputError(`${flag}: not a folder; name the folder of an installed ${PACKAGE_NAME} (node_modules/${PACKAGE_NAME})`);
  const packageFile = path.join(dir, 'package.json');
  if (!lstatSync(packageFile, { throwIfNoEntry: false })) {
    throw new InputError(`${flag}: no package.json of ${PACKAGE_NAME} in it (name the folder of an installed ${PACKAGE_NAME}: node_modules/${PACKAGE_NAME})`);
  }
  const [pkg] = asInputError(`${flag}: package.json`, () => parseInputYaml(packageFile, decodeInput(packageFile, readInputBytes(packageFile, 'package')), 'package', false));
  if (!isJsonObject(pkg)) throw new InputError(`${flag}: its package.json is no JSON object`);
  if (pkg.name !== PACKAGE_NAME) throw new InputError(`${flag}: its package.json names ${printable(JSON.stringify(pkg.name) ?? 'nothing').slice(0, 100)}, not ${PACKAGE_NAME}`);
  const version = typeof pkg.version === 'string' && RELEASE.test(pkg.version) ? pkg.version : '(no version)';
  const bin = toolkitFile(path.resolve(dir), 'lib/src/bin.js');
  const versionsModule = toolkitFile(path.resolve(dir), 'lib/src/versions.js');
  if (!bin || !versionsModule) throw new InputError(`${flag}: ${PACKAGE_NAME} is not built there (no lib/src/bin.js): name an installed package`);

  const keys = Object.values(COMPONENTS).map((c) => c.key);
  // each child bounded as an engine run is (its time: GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT, its data memory:
  // GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB), its output far below the engines'
  const run = async (what: string, args: string[], cwd?: string) => {
    try {
      return await runEngine(process.execPath, args, {
        cwd, label: `${PACKAGE_NAME} ${version}`, maxOutputBytes: MAX_CHILD_OUTPUT, env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false' },
      });
    } catch (e) {
      if (e instanceof EngineError) throw new InputError(`${flag}: ${what} failed: ${e.message}`);
      throw e;
    }
  };
  const printed = await run('loading its versions module', ['-e', PINS_SCRIPT, versionsModule, JSON.stringify(keys)]);
  const versions = pinsOf(printed, keys, flag);

  // a scratch folder of this process: what a killed run leaves is removed by the next
  const scratch = scratchFolder('gpu-cluster-manifests-upgrade-plan');
  const dispose = () => rmSync(scratch, { recursive: true, force: true });
  try {
    const out = path.join(scratch, 'dist');
    await run(`its synth of ${config}`, [bin, 'synth', '--config', path.resolve(config), '--out', out, '--no-validate', '--quiet'], scratch);
    const clusterDir = path.join(out, model.name);
    if (!statSync(clusterDir, { throwIfNoEntry: false })?.isDirectory()) throw new InputError(`${flag}: its synth of ${config} wrote no ${model.name}/`);
    // what it wrote goes through the bounded reader of every tree
    const view = readClusterFolder(clusterDir);
    return { label: `${PACKAGE_NAME} ${version} (${dir})`, view: { ...view, model }, versions, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}

/** The pins the child printed after PINS_MARKER: a version of each component or none; anything else is bad input. */
function pinsOf(printed: string, keys: readonly string[], flag: string): Record<string, string | undefined> {
  const line = printed.split('\n').reverse().find((l) => l.startsWith(PINS_MARKER));
  let pins: unknown;
  try {
    pins = line === undefined ? undefined : JSON.parse(line.slice(PINS_MARKER.length));
  } catch {
    pins = undefined;
  }
  if (!isJsonObject(pins)) throw new InputError(`${flag}: its versions module (lib/src/versions.js) printed no pins: is it a ${PACKAGE_NAME} package?`);
  const out: Record<string, string | undefined> = {};
  for (const k of keys) {
    const v = pins[k];
    if (v !== null && (typeof v !== 'string' || !RELEASE.test(v))) {
      throw new InputError(`${flag}: its versions module pins ${k} to ${printable(JSON.stringify(v) ?? 'nothing').slice(0, 100)}, which is no release`);
    }
    out[k] = v ?? undefined;
  }
  return out;
}
