import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { describedNodes, registerNodes } from './described-nodes';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { ClusterView, readClusters, renderClusterSources } from '../../src/check';
import { ARGOCD_FIELD_MANAGER } from '../../src/check/argocd-sync';
import { EXIT } from '../../src/cli';
import { liveCluster } from '../../src/commands/upgrade-plan';
import { EngineBudget, resolveEngines } from '../../src/engines';
import { workerIdentityName } from '../../src/model/multikueue-role';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { loadModels, synth } from '../../src/synth/pipeline';
import { applySteps, planSync, refusalText, SyncPlan, SyncStep, vendoredCrds, VendoredCrd } from '../../src/twin/argocd-sync';
import { controlPlaneBinary } from '../../src/twin/binary';
import { ControlPlane, startControlPlane } from '../../src/twin/control-plane';
import { KubeClient, KubeObject } from '../../src/twin/kube-client';
import { planUpgrade } from '../../src/upgrade/plan';
import { ComponentOrder, Finding, ObjectRef, UpgradePlan } from '../../src/upgrade/types';
import { locateChart, renderableChart } from '../../src/upstream/chart';
import { RenderSession } from '../../src/upstream/render-session';
import { VERSIONS } from '../../src/versions';
import { runMain } from '../helpers';
import { FLEET_FIXTURE, REFERENCE_FILE } from '../paths';
import { previousCrd, previousCrds, previousRelease } from '../upstream/previous-charts';

/*
 * Issue 50 on the real API server, with the real Helm: the operators the cluster really runs. A cluster that serves the
 * vendored Network Operator 26.1.2 NicClusterPolicy CRD (as the Instant Cluster image leaves it) and runs a GPU Operator
 * v26.3.3 installed by `helm install` of the vendored chart (its Deployment, its CRDs, its own cluster-policy).
 *
 * init records both releases; synth renders the adopted CRs in their form and the API server accepts them as Argo CD
 * applies them, and preflight passes; the same description forced to the pinned form is blocked by preflight naming
 * the field the server refuses; upgrade-plan --kubeconfig plans from what runs, and its order is applied step by step:
 * the owner's step is the real `helm upgrade` with the value the plan names, the adopted ClusterPolicy never goes.
 *
 * Stand-ins, named: no operator runs (no kubelet); Helm runs with --no-hooks (its hook Jobs would wait for pods), so the
 * CRDs its pre-upgrade hook applies are applied by the test from the plan's step, as that hook would.
 */

const work = mkdtempSync(path.join(tmpdir(), 'operator-releases-'));
const gpu = previousRelease('gpuOperator');
const net = previousRelease('networkOperator');
let cp: ControlPlane;
let helm: string;
let recorded: string;
let plan: SyncPlan;

const cli = runMain;
const admin = () => cp.client();

/** Runs the real helm against the control plane as its admin. */
async function helmRun(...args: string[]): Promise<string> {
  const engines = await resolveEngines();
  return engines.helm.run([...args, '--kubeconfig', cp.identities.admin.kubeconfig], { timeoutMs: 180_000 });
}

/** The chart folder helm installs for a carried release (stamped as published, the render's own preparation). */
function chartDir(chart: string, version: string): string {
  const located = locateChart(DEFAULT_UPSTREAM, chart, version);
  if (!located) throw new Error(`no vendored chart ${chart} ${version}`);
  return renderableChart(located, defaultCacheDir()).dir;
}

/** The vendored CRDs the cluster's Argo CD plan takes, the ClusterPolicy and NicClusterPolicy ones of the previous releases. */
function clusterCrds(): Map<string, VendoredCrd[]> {
  const crds = vendoredCrds(DEFAULT_SCHEMAS);
  for (const c of [...previousCrds('gpuOperator'), ...previousCrds('networkOperator')]) {
    if (c.kind === 'ClusterPolicy' || c.kind === 'NicClusterPolicy') crds.set(`${c.group}/${c.kind}`, [{ crd: structuredClone(c.object) as KubeObject, file: c.file }]);
  }
  return crds;
}

/** The rendered cluster of a description, and its Argo CD sync plan against this control plane. */
async function synced(config: string, name: string): Promise<{ view: ClusterView; plan: SyncPlan }> {
  const dist = path.join(work, name);
  const r = await cli('synth', '--config', config, '--out', dist, '--quiet');
  expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
  const [model] = loadModels([config]);
  const view = { ...readClusters(dist).find((c) => c.name === model.name)!, model };
  const session = new RenderSession(defaultCacheDir(), new EngineBudget());
  const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, session, reruns: false });
  return { view, plan: planSync(view, renders, clusterCrds(), await admin().servedKinds(), { tracking: true }) };
}

const exists = async (kind: 'ClusterPolicy' | 'NicClusterPolicy') => (await admin().get(kind === 'ClusterPolicy'
  ? '/apis/nvidia.com/v1/clusterpolicies/cluster-policy' : '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy')) !== undefined;

beforeAll(async () => {
  await controlPlaneBinary();
  cp = await startControlPlane();
  const [model] = loadModels([REFERENCE_FILE]);
  await registerNodes(cp, describedNodes(model));
  helm = chartDir(gpu.chart.chart, gpu.version);
  // the GPU Operator v26.3.3 as its owner installs it: its chart, its crds/, its cluster-policy (chart defaults)
  await helmRun('install', gpu.chart.chart, helm, '--namespace', 'gpu-operator', '--create-namespace', '--no-hooks');
  // the Network Operator's NicClusterPolicy CRD of 26.1.2, as the Instant Cluster image applies it (no operator Deployment seen)
  await admin().apply(previousCrd('networkOperator', 'NicClusterPolicy') as KubeObject, { fieldManager: 'kubectl' });
}, 30 * 60 * 1000);

afterAll(async () => {
  await cp?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('operators the cluster really runs (a real API server, a real helm install)', () => {
  it('init --kubeconfig, as the read-only identity, records both releases with where it read them', async () => {
    const r = await cli('init', '--kubeconfig', cp.identities.preflight.kubeconfig, '--name', 'instant-cluster', '--out', '-');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    const text = r.out.join('\n');
    const d = parse(text);
    expect(d.releases.gpuOperator).toBe(gpu.version);
    expect(d.releases.networkOperator).toBe(net.version);
    expect(text).toMatch(new RegExp(`gpuOperator: ${gpu.version} # from Deployment gpu-operator/gpu-operator: image \\S+:${gpu.version}; Helm release gpu-operator/gpu-operator`));
    expect(text).toContain('# from the NicClusterPolicy CRD the cluster serves (nicclusterpolicies.mellanox.com)');
    // the reference description with what init recorded: the cluster's description from here on
    const reference = parse(readFileSync(REFERENCE_FILE, 'utf8'));
    reference.releases = { gpuOperator: d.releases.gpuOperator, networkOperator: d.releases.networkOperator };
    recorded = path.join(work, 'instant-cluster.yaml');
    writeFileSync(recorded, stringify(reference));
  });

  it('synth renders the adopted CRs in their release\'s form: preflight passes, and the API server accepts every object as Argo CD applies it', async () => {
    expect(recorded).toBeDefined();
    ({ plan } = await synced(recorded, 'dist-recorded'));
    const pre = await applySteps(admin(), plan.steps.filter((s) => s.manager === 'pre-installed'));
    expect(pre.refused.map(refusalText)).toEqual([]);
    const r = await cli('preflight', '--config', recorded, '--kubeconfig', cp.identities.preflight.kubeconfig, '--format', 'json');
    const report = JSON.parse(r.out.join('\n'));
    expect(report.findings.filter((f: { severity: string }) => f.severity === 'error'), r.err.join('\n')).toEqual([]);
    expect(r.code).toBe(EXIT.ok);
    const sync = await applySteps(admin(), plan.steps.filter((s) => s.manager !== 'pre-installed'));
    expect(sync.refused.map(refusalText)).toEqual([]);
    const policy = sync.applied.find((a) => a.live.kind === 'NicClusterPolicy')!.live;
    expect((policy.spec as Record<string, unknown>).global).toBeUndefined();
    expect(await exists('ClusterPolicy')).toBe(true);
  }, 20 * 60 * 1000);

  it('the same description forced to the pinned form: preflight blocks naming the field, and the server refuses it there', async () => {
    const pinned = path.join(work, 'pinned.yaml');
    const d = parse(readFileSync(recorded, 'utf8'));
    delete d.releases;
    writeFileSync(pinned, stringify(d));
    const r = await cli('preflight', '--config', pinned, '--kubeconfig', cp.identities.preflight.kubeconfig, '--format', 'json');
    expect(r.code).toBe(EXIT.failed);
    const findings = JSON.parse(r.out.join('\n')).findings as { rule: string; severity: string; object: string; message: string; fix: string }[];
    const schema = findings.find((f) => f.rule === 'crd-schema' && f.object === 'NicClusterPolicy nic-cluster-policy');
    expect(schema?.message).toMatch(/at spec\.global/);
    expect(schema?.fix).toContain('upgrade-plan --config <description> --component network-operator --kubeconfig');
    expect(findings.filter((f) => f.rule === 'operator-release').map((f) => f.object).sort())
      .toEqual(['CustomResourceDefinition nicclusterpolicies.mellanox.com', 'Deployment gpu-operator/gpu-operator']);
    // what the server says of that render: the field preflight named
    const { plan: forced } = await synced(pinned, 'dist-pinned');
    const ncp = forced.steps.flatMap((s) => s.objects).find((o) => o.object.kind === 'NicClusterPolicy')!;
    const refused = await applySteps(admin(), [{ label: 'pinned form', manager: ARGOCD_FIELD_MANAGER, objects: [ncp] }], { dryRun: true });
    expect(refused.refused.map(refusalText).join('\n')).toMatch(/global/);
  }, 20 * 60 * 1000);

  describe('upgrade-plan --kubeconfig, as the read-only identity', () => {
    let result: UpgradePlan;
    beforeAll(async () => {
      const r = await cli('upgrade-plan', '--config', recorded, '--kubeconfig', cp.identities.preflight.kubeconfig, '--format', 'json');
      expect([EXIT.ok, EXIT.failed], r.err.join('\n')).toContain(r.code);
      result = JSON.parse(r.out.join('\n'));
    }, 20 * 60 * 1000);
    const order = (c: string): ComponentOrder => result.order.find((o) => o.component === c)!;
    const refs = (label: string, manager: string, list: readonly ObjectRef[], manifests: Record<string, KubeObject>): SyncStep => ({
      label,
      manager,
      objects: list.map((o) => ({ object: manifests[o.ref] ?? objectOf(o), application: label, source: o.source, wave: 0 })),
    });

    it('goes from the releases the cluster runs, and claims no driver or toolkit pods (the cluster runs none)', () => {
      expect(result.summary.blockers, JSON.stringify(result.findings.filter((f) => f.severity === 'blocker'))).toBe(0);
      expect(result.components.map((c) => `${c.component} ${c.from}`)).toEqual([`gpu-operator ${gpu.version}`, `network-operator ${net.version}`]);
      const claims = result.findings.filter((f: Finding) => f.section === 'gpu-node-impact' && /^spec\.(driver|toolkit)\b/.test(f.path ?? '') && f.type !== 'no-node-impact');
      expect(claims).toEqual([]);
      expect(result.findings.map((f) => f.message).join('\n')).not.toMatch(/pods go/);
      // Kueue runs no Deployment here: named, not planned
      expect(result.notes.join('\n')).toMatch(/kueue: .* shows no release of it/);
    });

    it('the order, applied step by step: the owner\'s real helm upgrade with the value the plan names keeps cluster-policy; the new forms are accepted', async () => {
      const manifests = await planManifests();
      for (const component of ['network-operator', 'gpu-operator']) {
        const o = order(component);
        if (o.rejected) {
          // before the operator's upgrade, the new form is refused by the CRD the cluster serves
          const first = o.rejected.steps[0];
          const refused = await applySteps(admin(), [refs('rejected', ARGOCD_FIELD_MANAGER, first.objects, manifests)], { dryRun: true });
          expect(refused.refused.length, o.rejected.why).toBeGreaterThan(0);
        }
        for (const step of o.steps) {
          if (step.application === null && component === 'gpu-operator') {
            // the owner's upgrade as the plan gives it: the real helm, with the vendored chart in place of the repository's
            expect(step.command).toContain('clusterPolicy.deployCR=false');
            const release = await releaseObjects();
            await helmRun(...fromVendored(step.command!, chartDir(gpu.chart.chart, VERSIONS.gpuOperator.version)), '--no-hooks');
            // what helm deleted of its old release is what the plan said the upgrade deletes
            const gone = [];
            for (const r of release) if (await admin().read(r) === undefined) gone.push(`${r.kind}/${r.metadata.name}`);
            expect(gone.sort()).toEqual((step.deletes ?? []).map((d) => `${d.kind}/${d.name}`).sort());
          }
          const applied = await applySteps(admin(), [refs(step.what, step.application === null ? 'helm' : ARGOCD_FIELD_MANAGER, step.objects, manifests)]);
          expect(applied.refused.map(refusalText), `${component} step ${step.step}: ${step.what}`).toEqual([]);
          // never without its CRs
          expect(await exists('ClusterPolicy'), `${component} step ${step.step}`).toBe(true);
          expect(await exists('NicClusterPolicy'), `${component} step ${step.step}`).toBe(true);
        }
      }
      const ncp = await admin().get('/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy');
      expect((ncp!.spec as Record<string, unknown>).global).toBeDefined();
    }, 20 * 60 * 1000);

    it('the other order loses it: without keep on the live copy, the same upgrade deletes cluster-policy; with it, even an uninstall leaves it', async () => {
      const policy = { apiVersion: 'nvidia.com/v1', kind: 'ClusterPolicy', metadata: { name: 'cluster-policy' } };
      await helmRun('uninstall', gpu.chart.chart, '--namespace', 'gpu-operator', '--no-hooks');
      expect(await exists('ClusterPolicy')).toBe(true);
      // the cluster before Argo CD adopted it: Helm's own copy of the first install, no keep on it
      await admin().delete(policy, 'Background');
      await helmRun('install', gpu.chart.chart, helm, '--namespace', 'gpu-operator', '--no-hooks');
      expect(await exists('ClusterPolicy')).toBe(true);
      const upgrade = order('gpu-operator').steps.find((st) => st.command !== undefined)!;
      await helmRun(...fromVendored(upgrade.command!, chartDir(gpu.chart.chart, VERSIONS.gpuOperator.version)), '--no-hooks');
      expect(await exists('ClusterPolicy')).toBe(false);
    }, 10 * 60 * 1000);

    /** The objects the plan's order names, by reference (its JSON gives references; planUpgrade returns them beside the plan). */
    async function planManifests(): Promise<Record<string, KubeObject>> {
      const source = { live: { kubeconfig: cp.identities.preflight.kubeconfig, timeoutMs: 60_000 } };
      const live = await liveCluster(source, DEFAULT_SCHEMAS, DEFAULT_UPSTREAM);
      const [model] = loadModels([recorded]);
      const { manifests } = await planUpgrade({
        model, components: ['gpu-operator', 'network-operator'], live, upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, cacheDir: defaultCacheDir(),
      });
      return Object.fromEntries([...manifests].map(([k, v]) => [k, v as KubeObject]));
    }
  });
});

/** The objects of the GPU Operator's Helm release (its current revision's manifest) that the cluster holds. */
async function releaseObjects(): Promise<KubeObject[]> {
  const text = await helmRun('get', 'manifest', gpu.chart.chart, '--namespace', 'gpu-operator');
  const listed = text.split(/^---\s*$/m).map((d) => parse(d) as KubeObject | null).filter((o): o is KubeObject => o !== null && typeof o === 'object' && typeof o.kind === 'string');
  const out: KubeObject[] = [];
  for (const o of listed) {
    const namespaced = (await admin().resource(o.apiVersion, o.kind))?.namespaced;
    const placed = namespaced && !o.metadata.namespace ? { ...o, metadata: { ...o.metadata, namespace: 'gpu-operator' } } : o;
    if (await admin().read(placed) !== undefined) out.push(placed);
  }
  return out;
}

/** A `helm upgrade` the plan gives (helm, its arguments, the chart from its repository) with a vendored chart folder in its place. */
function fromVendored(command: readonly string[], dir: string): string[] {
  const [tool, verb, release, , ...rest] = command;
  expect([tool, verb]).toEqual(['helm', 'upgrade']);
  const args: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '--repo' || rest[i] === '--version') i++;
    else args.push(rest[i]);
  }
  return [verb, release, dir, ...args];
}

function objectOf(o: ObjectRef): KubeObject {
  throw new Error(`the plan's manifests have no ${o.ref}`);
}

/*
 * Issue 50, item 6: the fleet page's commands that register a worker, run as written with the real kubectl (the
 * engines' kubectl) against this control plane, which stands for both the manager `hub` and the worker `lab-a` of the
 * fleet fixture (two contexts of one kubeconfig).
 */
describe('the fleet page\'s worker registration, run as written', () => {
  const fleetDir = path.join(work, 'fleet');
  let kubectl: string;
  let contexts: string;
  const token = () => cp.identities.admin.token;
  beforeAll(async () => {
    kubectl = (await resolveEngines()).kustomize.path;
    await admin().apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kueue-system' } } as KubeObject, { fieldManager: 'test' });
    // the identity lab-a renders for hub (its multikueue folder): a ServiceAccount whose token the commands take
    await admin().apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: workerIdentityName('hub'), namespace: 'kueue-system' } } as KubeObject, { fieldManager: 'test' });
    // the manager's Kueue API and its MultiKueueCluster lab-a, as its Argo CD synced them (the commands end by reading it)
    const crd = vendoredCrds(path.join(DEFAULT_SCHEMAS, 'kueue')).get('kueue.x-k8s.io/MultiKueueCluster')![0].crd;
    await applySteps(admin(), [{ label: 'kueue CRD', manager: 'kubectl', objects: [{ object: crd, application: 'pre-installed', source: 'test', wave: 0 }] }]);
    const out = path.join(work, 'fleet-hub');
    synth({ clustersDir: FLEET_FIXTURE, out, schemas: false });
    const rendered = readClusters(out).find((c) => c.name === 'hub')!.folders.flatMap((f) => f.objects)
      .find((o) => o.kind === 'MultiKueueCluster' && o.metadata.name === 'lab-a')!;
    await admin().apply(rendered as KubeObject, { fieldManager: ARGOCD_FIELD_MANAGER });
  });

  /** The fleet fixture with lab-a's server as fleet.yaml may name it, synthesized: the sh block that registers lab-a. */
  function registration(server: string | undefined): string {
    cpSync(FLEET_FIXTURE, fleetDir, { recursive: true, force: true });
    const fleet = parse(readFileSync(path.join(fleetDir, 'fleet.yaml'), 'utf8'));
    const lab = fleet.multiKueue.workers.find((w: { cluster: string }) => w.cluster === 'lab-a');
    if (server) lab.server = server;
    else delete lab.server;
    writeFileSync(path.join(fleetDir, 'fleet.yaml'), stringify(fleet));
    const out = path.join(work, `fleet-dist-${server ? 'server' : 'default'}`);
    synth({ clustersDir: fleetDir, out, schemas: false });
    const page = readFileSync(path.join(out, 'fleet', 'README.md'), 'utf8');
    const section = page.slice(page.indexOf('### lab-a: Secret'));
    const block = /```sh\n([\s\S]*?)```/.exec(section)![1];
    // its last line waits for lab-a to connect: the work of a Kueue, which this control plane does not run
    // (fleet-twin.test.ts runs the whole block with the manager's Kueue); the wait for the MultiKueueCluster runs here
    const connected = /^kubectl --context hub wait --for=condition=Active multikueuecluster\/lab-a .*\n/m;
    expect(block).toMatch(connected);
    return block.replace(connected, '');
  }

  /** Runs the block with bash in a folder of its own, the contexts `hub` and `lab-a` in KUBECONFIG. */
  function run(block: string, env: Record<string, string> = {}): void {
    const dir = mkdtempSync(path.join(work, 'run-'));
    const r = spawnSync('bash', ['--norc', '--noprofile', '-eo', 'pipefail', '-c', block], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
      env: { PATH: `${path.dirname(kubectl)}:${process.env.PATH}`, HOME: dir, KUBECONFIG: contexts, ...env },
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
  }

  /** A kubeconfig with contexts hub and lab-a, lab-a at `labServer`, with or without the CA written in. */
  function kubeconfig(labServer: string, labCa: boolean): string {
    const ca = readFileSync(cp.caFile).toString('base64');
    const file = path.join(work, `contexts-${labCa ? 'ca' : 'public'}.yaml`);
    writeFileSync(file, stringify({
      'apiVersion': 'v1',
      'kind': 'Config',
      'clusters': [
        { name: 'hub', cluster: { 'server': cp.server, 'certificate-authority-data': ca } },
        { name: 'lab-a', cluster: { server: labServer, ...(labCa ? { 'certificate-authority-data': ca } : {}) } },
      ],
      'users': [{ name: 'admin', user: { token: token() } }],
      'contexts': [{ name: 'hub', context: { cluster: 'hub', user: 'admin' } }, { name: 'lab-a', context: { cluster: 'lab-a', user: 'admin' } }],
      'current-context': 'hub',
    }));
    return file;
  }

  const secret = async () => (await admin().get('/api/v1/namespaces/kueue-system/secrets/multikueue-lab-a'))!;
  const storedKubeconfig = async () => parse(Buffer.from(String(((await secret()) as unknown as { data: Record<string, string> }).data.kubeconfig), 'base64').toString('utf8'));

  it('a private CA and the server fleet.yaml names: both written in; the token works; no copy of it in an annotation, even over an old client-side apply', async () => {
    // the address in the administrator's kubeconfig is not the one the manager's pods use
    const fleetServer = cp.server;
    contexts = kubeconfig(`${cp.server}/`, true);
    // what an older recipe left: the Secret applied client-side, an old token in its last-applied annotation
    const old = spawnSync(kubectl, ['--kubeconfig', contexts, '--context', 'hub', 'apply', '-f', '-'], {
      input: stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'multikueue-lab-a', namespace: 'kueue-system' }, stringData: { kubeconfig: 'old-token-in-here' } }), encoding: 'utf8',
    });
    expect(old.status, old.stderr).toBe(0);
    expect(JSON.stringify((await secret()).metadata.annotations ?? {})).toContain('old-token-in-here');
    const block = registration(fleetServer);
    run(block);
    run(block);
    const k = await storedKubeconfig();
    expect(k.clusters[0].cluster.server).toBe(fleetServer);
    expect(k.clusters[0].cluster['certificate-authority-data']).toBe(readFileSync(cp.caFile).toString('base64'));
    const stored = k.users[0].user.token as string;
    // the token is the worker identity's, and the server takes it
    const probe = await new KubeClient(cp.server, readFileSync(cp.caFile), stored).request('GET', '/apis');
    expect(probe.status).toBe(200);
    const annotations = JSON.stringify((await secret()).metadata.annotations ?? {});
    expect(annotations).not.toContain(stored);
    expect(annotations).not.toContain('old-token-in-here');
  });

  it('a public CA (the worker\'s kubeconfig has none) and no server in fleet.yaml: the worker context\'s server, no CA written in', async () => {
    // the CA is one the system trusts: kubectl finds it through SSL_CERT_FILE, as it would a public one
    contexts = kubeconfig(cp.server, false);
    run(registration(undefined), { SSL_CERT_FILE: cp.caFile });
    const k = await storedKubeconfig();
    expect(k.clusters[0].cluster.server).toBe(cp.server);
    expect(k.clusters[0].cluster['certificate-authority-data']).toBeUndefined();
    expect(JSON.stringify((await secret()).metadata.annotations ?? {})).not.toContain(k.users[0].user.token);
  });
});
