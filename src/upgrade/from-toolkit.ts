import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { COMPONENTS } from './components';
import { FromToolkit } from './plan';
import { readClusterFolder } from '../check/tree';
import { InputError, stripControl } from '../errors';
import { ClusterModel } from '../model/model';
import { PACKAGE_NAME } from '../paths';
import { UpgradableKey } from '../upstream/previous-releases';

/** How long the other toolkit's synth may run. */
const SYNTH_TIMEOUT_MS = 180_000;

/** The other toolkit's render, in a temporary folder: call `dispose` when the plan is made. */
export interface LoadedToolkit extends FromToolkit {
  dispose(): void;
}

/**
 * The toolkit-to-toolkit form's old end: another installed version of this package (`npm install
 * gpu-cluster-manifests@0.1.0 --prefix /tmp/prev` -> /tmp/prev/node_modules/gpu-cluster-manifests, or a checkout of
 * it, built), its own `synth` of the same description into a temporary folder (its render of that cluster, as that
 * version wrote it), and the releases it pins (its compiled versions module). Anything that is not such a package,
 * or a synth of it that fails, is bad input naming --from-toolkit.
 */
export function loadFromToolkit(dir: string, config: string, model: ClusterModel): LoadedToolkit {
  const flag = `--from-toolkit ${dir}`;
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InputError(`${flag}: no such folder`);
  let pkg: { name?: unknown; version?: unknown };
  try {
    pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as typeof pkg;
  } catch {
    throw new InputError(`${flag}: no package.json of ${PACKAGE_NAME} in it (name the folder of an installed ${PACKAGE_NAME}: node_modules/${PACKAGE_NAME})`);
  }
  if (pkg.name !== PACKAGE_NAME) throw new InputError(`${flag}: its package.json names ${JSON.stringify(pkg.name)}, not ${PACKAGE_NAME}`);
  const bin = path.join(dir, 'lib', 'src', 'bin.js');
  const versionsModule = path.join(dir, 'lib', 'src', 'versions.js');
  if (!existsSync(bin) || !existsSync(versionsModule)) throw new InputError(`${flag}: ${PACKAGE_NAME} is not built there (no lib/src/bin.js): name an installed package`);
  const VERSIONS = (createRequire(__filename)(versionsModule) as { VERSIONS?: Record<UpgradableKey, { version?: unknown } | undefined> }).VERSIONS;
  if (!VERSIONS) throw new InputError(`${flag}: lib/src/versions.js exports no VERSIONS`);
  const versions = Object.fromEntries(Object.values(COMPONENTS).map((c) => c.key)
    .map((k) => [k, typeof VERSIONS[k]?.version === 'string' ? VERSIONS[k]!.version as string : undefined]));
  const out = mkdtempSync(path.join(tmpdir(), 'upgrade-plan-from-'));
  const dispose = () => rmSync(out, { recursive: true, force: true });
  try {
    const r = spawnSync(process.execPath, [bin, 'synth', '--config', path.resolve(config), '--out', out, '--no-validate', '--quiet'], {
      cwd: out, encoding: 'utf8', timeout: SYNTH_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false' },
    });
    if (r.status !== 0) {
      const why = r.error ? r.error.message : stripControl((r.stderr || r.stdout).trim().split('\n').pop() ?? `exit ${r.status}`);
      throw new InputError(`${flag}: its synth of ${config} failed: ${why}`);
    }
    const clusterDir = path.join(out, model.name);
    if (!existsSync(clusterDir)) throw new InputError(`${flag}: its synth of ${config} wrote no ${model.name}/`);
    const view = readClusterFolder(clusterDir);
    return { label: `${PACKAGE_NAME} ${String(pkg.version)} (${dir})`, view: { ...view, model }, versions, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}
