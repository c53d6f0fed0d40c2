import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { synth } from '../../src/synth/pipeline';
import { BatchOutcome, runCliChildBatch } from '../child-cli';
import { fakeEngines } from '../engines/fake-engines';
import { HAS_UPSTREAM, modelOf, REFERENCE_FILE } from '../helpers';

/*
 * `check` as users run it (the compiled CLI in a child, a fake helm first on PATH), where the process is the
 * point: its exit code, its lines, and its peak memory (the child's maxRSS, printed for the record) against
 * engines that fail, hang or flood. Short bounds come from the environment variables the README documents.
 *
 * check runs helm twice for the reference tree (the default render of the GPU Operator's chart and of the
 * Network Operator's, which image-matches-upstream compares with), so each fake helm plays two of the
 * hostile engines, one per chart; the three checks run one after the other in one child (the CLI's entry
 * once per check, each with its own PATH), whose peak memory bounds each of them.
 */

const work = mkdtempSync(path.join(tmpdir(), 'hostile-check-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let cluster: string;
/** Far above what check needs for the reference tree (some 200 MB), far below what the floods took before (4 GB). */
const MAX_RSS = 700 * 1024 * 1024;

/** A helm template that does `gpu` for the GPU Operator's chart and `network` for the Network Operator's. */
const perChart = (gpu: string, network: string) => `case "$*" in\n  *--namespace=gpu-operator*) ${gpu};;\n  *) ${network};;\nesac`;

const HELM = {
  failing: 'echo "Error: boom" >&2; exit 3',
  twoGiB: 'head -c 2147483648 /dev/zero | tr "\\0" "a"',
  tinyDocuments: 'yes -- "--- {a: 1}" | head -n 6000000',
  /** The most the bounds let through: 9000 documents, 32 MiB. */
  most: 'awk \'BEGIN { d = sprintf("%3500s", ""); gsub(/ /, "x", d); for (i = 0; i < 9000; i++) printf "---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: c%d\\ndata:\\n  k: %s\\n", i, d }\'',
  hanging: 'exec sleep 600',
};

const CHECKS = ['floods', 'failing and the most', 'hanging'] as const;
let batch: Promise<BatchOutcome>;
const outcome = async (name: typeof CHECKS[number]) => {
  const r = (await batch).runs[CHECKS.indexOf(name)];
  expect(r.stderr).not.toMatch(/internal error|^\s+at /m);
  return r;
};

/** The error lines of a check (one line each). */
const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('error '));

describe.skipIf(!HAS_UPSTREAM)('check with a hostile helm first on PATH', () => {
  beforeAll(() => {
    const out = path.join(work, 'out');
    synth({ configs: [REFERENCE_FILE], clustersDir: path.dirname(REFERENCE_FILE), out, schemas: false });
    cluster = modelOf().name;
    const tree = path.join(out, cluster);
    // a tree whose Helm Application names ../../../dev/zero as a values file
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
    const run = (name: string, helm: string, dir: string, env: Record<string, string> = {}) => ({
      args: ['check', dir, '--config', REFERENCE_FILE],
      env: { PATH: `${fakeEngines(work, name, { helm })}${path.delimiter}${process.env.PATH ?? ''}`, GPU_CLUSTER_MANIFESTS_CACHE: 'off', ...env },
    });
    batch = runCliChildBatch(work, [
      run('floods', perChart(HELM.twoGiB, HELM.tinyDocuments), tree),
      run('failing-and-most', perChart(HELM.most, HELM.failing), tree),
      run('hanging', HELM.hanging, hostile, { GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT: '1' }),
    ], 300_000);
    batch.catch(() => {});
  });

  it('a helm that prints 2 GiB, and one that prints 6 million tiny documents: exit 1, one line per comparison, each stopped at its bound', async () => {
    const r = await outcome('floods');
    expect(r.code).toBe(1);
    const errors = errorLines(r.stderr);
    expect(errors).toHaveLength(2);
    expect(errors.filter((l) => l.includes('gpu-operator v26.7.0 chart'))).toEqual([expect.stringMatching(/output over 32 MiB; stopped/)]);
    expect(errors.filter((l) => l.includes('network-operator 26.4.1 chart'))).toEqual([expect.stringMatching(/output over 10000 YAML documents; stopped/)]);
  });

  it('a helm that answers its version and fails everything else, and one that prints the most the bounds let through (9000 documents, 32 MiB): exit 1, the comparisons it serves are errors', async () => {
    const r = await outcome('failing and the most');
    expect(r.code).toBe(1);
    const errors = errorLines(r.stderr);
    expect(errors).toHaveLength(2);
    expect(errors).toContain(`error [image-matches-upstream] ${cluster}: NicClusterPolicy nic-cluster-policy: cannot be compared with its release's images: helm template of the network-operator 26.4.1 chart with its default values fails: exit 3: Error: boom`);
    expect(errors.filter((l) => l.startsWith(`error [image-matches-upstream] ${cluster}: ClusterPolicy cluster-policy: `))).toEqual([expect.stringMatching(/renders no (ClusterPolicy|image)/)]);
    expect(r.stdout).toMatch(/^FAILED: 1 cluster\(s\), \d+ objects, .* 2 errors/m);
  });

  it('a helm that never ends (a short bound), and a tree whose Helm Application names ../../../dev/zero as a values file: exit 1', async () => {
    const r = await outcome('hanging');
    expect(r.code).toBe(1);
    const errors = errorLines(r.stderr);
    // refused before helm runs: the values file is never read
    expect(errors).toContain(`error [application-renders] ${cluster}: Application argocd/zero: chart gpu-operator v26.7.0 does not render: helm.valueFiles entry "../../../dev/zero" is not a relative path inside its folder`);
    const stopped = errors.filter((l) => l.startsWith('error [image-matches-upstream]'));
    expect(stopped).toHaveLength(2);
    for (const l of stopped) expect(l).toMatch(/fails: no answer within 1 s; stopped \(GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it\)$/);
  });

  it('in bounded memory, each of them', async () => {
    const b = await batch;
    console.log(`hostile check, ${CHECKS.join(', ')}: exit ${b.runs.map((r) => r.code).join(', ')}, peak RSS ${Math.round(b.maxRSS / 1024 / 1024)} MB`);
    expect(b.maxRSS).toBeLessThan(MAX_RSS);
    expect(b.stderr).toBe('');
  });
});
