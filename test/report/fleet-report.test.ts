// @vitest-environment jsdom
// Mermaid's parser sanitizes labels with DOMPurify, which needs a DOM: jsdom provides one.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MultiKueueFacts } from '../../src/check/multikueue';
import { FLEET_REPORT_FILE, fleetReport } from '../../src/report/fleet';
import { synth } from '../../src/synth/pipeline';
import { FLEET_FIXTURE } from '../helpers';

let page: string;

beforeAll(() => {
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'fleet-report-')), 'dist');
  synth({ clustersDir: FLEET_FIXTURE, out, schemas: false });
  page = readFileSync(path.join(out, 'fleet', FLEET_REPORT_FILE), 'utf8');
});

describe('the fleet page (dist/fleet/README.md) of a MultiKueue fleet', () => {
  it('draws the manager, its ClusterQueues, the AdmissionCheck and the workers in dispatch order, and Mermaid\'s own parser accepts it', async () => {
    const blocks = [...page.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks).toHaveLength(1);
    const { default: mermaid } = await import('mermaid');
    await expect(mermaid.parse(blocks[0])).resolves.toMatchObject({ diagramType: 'flowchart-v2' });
    expect(blocks[0]).toMatch(/ac_multikueue -->\|"1"\| worker_lab_a\n(.*\n)*\s+ac_multikueue -->\|"2"\| worker_lab_b/);
    expect(blocks[0]).toContain('cq_research["ClusterQueue research<br/>56 GPUs nominal"]');
  });

  it('tells the quotas per ClusterQueue and worker, the dispatcher, and how to register each worker', () => {
    expect(page).toMatch(/^\| `research` \| `research\/research` \| `multikueue` \| 1\. lab-a \(8\), 2\. lab-b \(48\) \| 56 \|/m);
    expect(page).toContain('Dispatcher `kueue.x-k8s.io/multikueue-dispatcher-incremental`');
    expect(page).toMatch(/### lab-a: Secret `kueue-system\/multikueue-lab-a` on hub/);
    expect(page).toMatch(/### lab-b: ClusterProfile `kueue-system\/lab-b` on hub/);
  });
});

/** A MultiKueue manager with one worker registered by kubeconfig Secret: what the fleet page is written from. */
const manager: MultiKueueFacts = {
  cluster: 'hub',
  localQueues: [],
  clusterQueues: [],
  flavors: [],
  topologies: [],
  admissionChecks: [{ name: 'multikueue', config: 'multikueue' }],
  configs: [{ name: 'multikueue', clusters: ['lab-a'] }],
  clusters: [{ name: 'lab-a', secret: 'multikueue-lab-a' }],
};

describe('the fleet page\'s commands that register a worker by kubeconfig Secret (test/cluster/operator-releases.test.ts runs them)', () => {
  const block = (p: string) => /### lab-a: Secret[\s\S]*?```sh\n([\s\S]*?)```/.exec(p)![1];

  it('the server the fleet names for the worker (the address the manager\'s pods reach), else the worker context\'s with a word to check it', () => {
    const named = block(fleetReport([{ ...manager, clusters: [{ name: 'lab-a', secret: 'multikueue-lab-a', server: 'https://lab-a.internal:6443' }] }])!);
    expect(named).toContain('SERVER=https://lab-a.internal:6443');
    expect(named).not.toContain('config view --minify -o jsonpath=\'{.clusters[0].cluster.server}\'');
    const own = block(page);
    expect(own).toMatch(/SERVER="\$\(kubectl --context lab-a config view --minify -o jsonpath='\{\.clusters\[0\]\.cluster\.server\}'\)"/);
    expect(own).toContain('else set workers[].server in fleet.yaml');
  });

  it('the CA written in only when the worker\'s kubeconfig has one; the Secret applied server-side under its own manager, never client-side', () => {
    const own = block(page);
    expect(own).toMatch(/if \[ -n "\$CA" \]; then .*--embed-certs --certificate-authority=lab-a-ca\.crt; fi/);
    expect(own).toContain('apply --server-side --force-conflicts --field-manager=gpu-cluster-manifests -f -');
    expect(own).not.toMatch(/apply -f -$/m);
    expect(own).toContain('annotate secret multikueue-lab-a kubectl.kubernetes.io/last-applied-configuration-');
  });
});

describe('the fleet page\'s MultiKueue settings', () => {
  const settings = { dispatcherName: 'kueue.x-k8s.io/multikueue-dispatcher-all-at-once', gcInterval: '2m', origin: 'hub-origin', workerLostTimeout: '7m' };

  it('are the rendered configuration\'s; with a Kueue the toolkit does not install, the page names no value for them', () => {
    const rendered = fleetReport([{ ...manager, settings }])!;
    expect(rendered).toContain('Garbage collection every `2m` of what hub created on the workers (label `kueue.x-k8s.io/multikueue-origin: hub-origin`); a Workload whose worker is lost stays admitted for `7m`');
    expect(rendered).toContain('requeued on hub after `7m` (workerLostTimeout)');
    const own = fleetReport([manager])!;
    expect(own).toContain('hub\'s Kueue is not installed by this toolkit');
    expect(own).toContain('requeued on hub after the `workerLostTimeout` of its Kueue\'s configuration.');
  });

  it('a rendered configuration without one of them is the toolkit\'s error, not a default written in its place', () => {
    const { gcInterval, ...rest } = settings;
    expect(gcInterval).toBe('2m');
    expect(() => fleetReport([{ ...manager, settings: rest }])).toThrow('the rendered Kueue configuration of hub has no multiKueue.gcInterval');
  });
});
