import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { synth } from '../../src/synth/pipeline';
import { runCliChild } from '../child-cli';
import { fakeEngines } from '../engines/fake-engines';
import { HAS_UPSTREAM, modelOf, REFERENCE_FILE } from '../helpers';

/*
 * `check` as users run it (the compiled CLI in a child, a fake helm first on PATH), where the process is the
 * point: its exit code, its lines, and its peak memory (the child's maxRSS, printed for the record) against
 * engines that fail, hang or flood. Short bounds come from the environment variables the README documents.
 */

const work = mkdtempSync(path.join(tmpdir(), 'hostile-check-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let tree: string;
let cluster: string;
/** Far above what check needs for the reference tree (some 200 MB), far below what the floods took before (4 GB). */
const MAX_RSS = 700 * 1024 * 1024;

beforeAll(() => {
  const out = path.join(work, 'out');
  synth({ configs: [REFERENCE_FILE], clustersDir: path.dirname(REFERENCE_FILE), out, schemas: false });
  cluster = modelOf().name;
  tree = path.join(out, cluster);
});

/** check of `dir` in a child with `bin` first on PATH; prints the peak memory for the record. */
async function check(name: string, bin: string, dir = tree, env: Record<string, string> = {}) {
  const r = await runCliChild(work, ['check', dir, '--config', REFERENCE_FILE], {
    PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, GPU_CLUSTER_MANIFESTS_CACHE: 'off', ...env,
  });
  console.log(`hostile check, ${name}: exit ${r.code}, peak RSS ${Math.round(r.maxRSS / 1024 / 1024)} MB`);
  expect(r.stderr).not.toMatch(/internal error|^\s+at /m);
  expect(r.maxRSS).toBeLessThan(MAX_RSS);
  return r;
}

/** The error lines of a check (one line each). */
const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('error '));

describe.skipIf(!HAS_UPSTREAM)('check with a hostile helm first on PATH', () => {
  it('a helm that answers its version and fails everything else: exit 1, the comparisons it serves are errors', async () => {
    const r = await check('failing helm', fakeEngines(work, 'failing', { helm: 'echo "Error: boom" >&2; exit 3' }));
    expect(r.code).toBe(1);
    expect(errorLines(r.stderr)).toEqual([
      `error [image-matches-upstream] ${cluster}: ClusterPolicy cluster-policy: cannot be compared with its release's images: helm template of the gpu-operator v26.7.0 chart with its default values fails: exit 3: Error: boom`,
      `error [image-matches-upstream] ${cluster}: NicClusterPolicy nic-cluster-policy: cannot be compared with its release's images: helm template of the network-operator 26.4.1 chart with its default values fails: exit 3: Error: boom`,
    ]);
    expect(r.stdout).toMatch(/^FAILED: 1 cluster\(s\), \d+ objects, .* 2 errors/m);
  });

  const floods: [string, string, RegExp][] = [
    ['a helm that prints 2 GiB', 'head -c 2147483648 /dev/zero | tr "\\0" "a"', /output over 32 MiB; stopped/],
    ['a helm that prints 6 million tiny documents', 'yes -- "--- {a: 1}" | head -n 6000000', /output over 10000 YAML documents; stopped/],
    ['a helm that prints the most the bounds let through (9000 documents, 32 MiB)', 'awk \'BEGIN { d = sprintf("%3500s", ""); gsub(/ /, "x", d); for (i = 0; i < 9000; i++) printf "---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: c%d\\ndata:\\n  k: %s\\n", i, d }\'', /renders no (ClusterPolicy|image)/],
  ];
  for (const [name, body, says] of floods) {
    it(`${name}: exit 1, one line per comparison, bounded memory`, async () => {
      const r = await check(name, fakeEngines(work, name.replace(/\W+/g, '-'), { helm: body }));
      expect(r.code).toBe(1);
      expect(errorLines(r.stderr)).toHaveLength(2);
      for (const l of errorLines(r.stderr)) expect(l).toMatch(says);
    });
  }

  it('a helm that never ends (a short bound), and a tree whose Helm Application names ../../../dev/zero as a values file: exit 1, bounded memory', async () => {
    const hostile = path.join(work, 'hostile-tree', cluster);
    cpSync(tree, hostile, { recursive: true });
    const app = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'zero', namespace: 'argocd' },
      spec: {
        project: cluster,
        destination: { server: 'https://kubernetes.default.svc', namespace: 'gpu-operator' },
        source: { repoURL: 'https://helm.ngc.nvidia.com/nvidia', chart: 'gpu-operator', targetRevision: 'v26.7.0', helm: { valueFiles: ['../../../dev/zero'] } },
      },
    };
    writeFileSync(path.join(hostile, 'gitops', 'application.argocd.zero.yaml'), stringify(app));
    const r = await check('hanging helm, values file /dev/zero', fakeEngines(work, 'hanging', { helm: 'exec sleep 600' }), hostile, { GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT: '1' });
    expect(r.code).toBe(1);
    const errors = errorLines(r.stderr);
    // refused before helm runs: the values file is never read
    expect(errors).toContain(`error [application-renders] ${cluster}: Application argocd/zero: chart gpu-operator v26.7.0 does not render: helm.valueFiles entry "../../../dev/zero" is not a relative path inside its folder`);
    const stopped = errors.filter((l) => l.startsWith('error [image-matches-upstream]'));
    expect(stopped).toHaveLength(2);
    for (const l of stopped) expect(l).toMatch(/fails: no answer within 1 s; stopped \(GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it\)$/);
  });
});
