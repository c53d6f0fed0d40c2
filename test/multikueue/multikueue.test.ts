import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ClusterIndex } from '../../src/check/cluster-index';
import { ClusterView } from '../../src/check/cluster-view';
import { CheckFailed } from '../../src/check/engine';
import { nominalQuota } from '../../src/check/kueue';
import { checkFleet, FLEET_RULES, kubeconfigSecretCommand, MultiKueueFacts, multiKueueFacts } from '../../src/check/multikueue';
import { credentialKind } from '../../src/check/security';
import { readClusters } from '../../src/check/tree';
import { EXIT, main } from '../../src/cli';
import { CLUSTER_PROFILE_GATE } from '../../src/components/kueue/manager-config';
import { isDescriptionFile } from '../../src/model/description-files';
import { FLEET_FILE, FleetDescriptionSchema, MULTIKUEUE_DISPATCHERS } from '../../src/model/fleet';
import { loadModels } from '../../src/model/load-models';
import { ClusterModel } from '../../src/model/model';
import { LABELS, MULTIKUEUE, NAMESPACES } from '../../src/model/names';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { FLEET_REPORT_FILE } from '../../src/report/fleet';
import { descriptionFiles, synth } from '../../src/synth/pipeline';
import { renderCluster } from '../../src/synth/render';
import { celViolations, crdVersionSchema } from '../crd-cel';
import { FLEET_FIXTURE, HAS_SCHEMAS, readTreeFiles, ROOT, runCliInProcess, schemaErrors } from '../helpers';

type Json = Record<string, any>;

const fleetYaml = () => parse(readFileSync(path.join(FLEET_FIXTURE, FLEET_FILE), 'utf8')) as Json;
const spec = (m: Manifest) => m.spec as Json;

/** A copy of the fleet fixture in a new temporary folder (its descriptions and fleet.yaml), each file edited as asked. */
function fleetCopy(edits: Record<string, (d: Json) => void> = {}): string {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'mk-fleet-')), 'clusters');
  cpSync(FLEET_FIXTURE, dir, { recursive: true });
  for (const [file, edit] of Object.entries(edits)) {
    const p = path.join(dir, file);
    const d = parse(readFileSync(p, 'utf8')) as Json;
    edit(d);
    writeFileSync(p, stringify(d));
  }
  return dir;
}

let tree: string;
let models: Map<string, ClusterModel>;
let views: ClusterView[];

beforeAll(() => {
  tree = path.join(mkdtempSync(path.join(tmpdir(), 'mk-tree-')), 'dist');
  synth({ clustersDir: FLEET_FIXTURE, out: tree, schemas: false });
  models = new Map(loadModels(descriptionFiles(FLEET_FIXTURE)).map((m) => [m.name, m]));
  views = readClusters(tree).map((v) => ({ ...v, model: models.get(v.name) }));
});

const objectsOf = (cluster: string) => views.find((v) => v.name === cluster)!.folders.flatMap((f) => [...f.objects]);
const find = (cluster: string, kind: string, name: string) => {
  const o = objectsOf(cluster).find((m) => m.kind === kind && m.metadata.name === name);
  if (!o) throw new Error(`${cluster}: no ${kind} ${name}`);
  return o;
};

describe('a MultiKueue fleet described in fleet.yaml', () => {
  it('the fleet descriptions of the README and docs/ are valid as written', () => {
    const blocks = ['README.md', 'docs/description.md', 'docs/components/kueue-and-tenants.md']
      .flatMap((f) => [...readFileSync(path.join(ROOT, f), 'utf8').matchAll(/```yaml[^\n]*\n((?:#.*\n)*multiKueue:[\s\S]*?)```/g)].map((m) => [f, m[1]] as const));
    expect(blocks.length).toBe(3);
    for (const [f, text] of blocks) expect(FleetDescriptionSchema.safeParse(parse(text)).error?.issues, f).toBeUndefined();
  });

  it('fleet.yaml is the fleet description, never a cluster description', () => {
    expect(isDescriptionFile(FLEET_FILE)).toBe(false);
    expect(descriptionFiles(FLEET_FIXTURE).map((f) => path.basename(f))).toEqual(['hub.yaml', 'lab-a.yaml', 'lab-b.yaml']);
  });

  it('gives every member its role, from the whole fleet even when one description is loaded alone', () => {
    expect(models.get('hub')!.multiKueue?.role).toBe('manager');
    expect(models.get('lab-a')!.multiKueue).toEqual({ role: 'worker', manager: 'hub' });
    expect(models.get('lab-b')!.multiKueue).toEqual({ role: 'worker', manager: 'hub' });
    const [alone] = loadModels([path.join(FLEET_FIXTURE, 'hub.yaml')]);
    expect(alone.multiKueue).toEqual(models.get('hub')!.multiKueue);
  });

  it('the manager\'s ClusterQueues hold, per resource, the sum of the workers\' ClusterQueues behind the mirrored LocalQueues, as the workers render them', () => {
    const hub = renderCluster(models.get('hub')!);
    const workers = ['lab-a', 'lab-b'].map((w) => renderCluster(models.get(w)!).folders.flatMap((f) => [...f.objects]));
    const hubObjects = hub.folders.flatMap((f) => [...f.objects]);
    const managerQueues = hubObjects.filter((m) => m.kind === 'ClusterQueue');
    expect(managerQueues.map((q) => q.metadata.name).sort()).toEqual(['default', 'inference', 'research']);
    for (const cq of managerQueues) {
      const lq = hubObjects.find((m) => m.kind === 'LocalQueue' && spec(m).clusterQueue === cq.metadata.name)!;
      const covered = (spec(cq).resourceGroups as Json[]).flatMap((g) => g.coveredResources as string[]);
      expect(covered.length).toBeGreaterThanOrEqual(3);
      for (const r of covered) {
        const sum = workers.reduce((s, objects) => {
          const mirror = objects.find((m) => m.kind === 'LocalQueue' && m.metadata.namespace === lq.metadata.namespace && m.metadata.name === lq.metadata.name)!;
          return s + nominalQuota(objects.find((m) => m.kind === 'ClusterQueue' && m.metadata.name === spec(mirror).clusterQueue)!, r);
        }, 0);
        expect(nominalQuota(cq, r), `${cq.metadata.name} ${r}`).toBeCloseTo(sum, 6);
      }
    }
  });

  it('renders the manager: one AdmissionCheck and MultiKueueConfig (workers in fleet.yaml\'s order), a MultiKueueCluster per worker by name only, dispatching ClusterQueues', () => {
    const fleet = fleetYaml().multiKueue;
    const ac = find('hub', 'AdmissionCheck', 'multikueue');
    expect(spec(ac)).toEqual({ controllerName: MULTIKUEUE.controllerName, parameters: { apiGroup: 'kueue.x-k8s.io', kind: 'MultiKueueConfig', name: 'multikueue' } });
    expect(spec(find('hub', 'MultiKueueConfig', 'multikueue')).clusters).toEqual(fleet.workers.map((w: Json) => w.cluster));
    for (const w of fleet.workers) {
      const source = spec(find('hub', 'MultiKueueCluster', w.cluster)).clusterSource;
      expect(source).toEqual(w.kubeconfigSecret ? { kubeConfig: { location: w.kubeconfigSecret, locationType: 'Secret' } } : { clusterProfileRef: { name: w.clusterProfile } });
    }
    for (const cq of objectsOf('hub').filter((m) => m.kind === 'ClusterQueue')) {
      expect(spec(cq).admissionChecksStrategy).toEqual({ admissionChecks: [{ name: 'multikueue' }] });
      expect(spec(cq)).not.toHaveProperty('admissionChecks');
      expect((spec(cq).resourceGroups as Json[]).flatMap((g) => g.flavors)).toHaveLength(1);
    }
    // the manager needs no GPU node of its own: its ClusterPolicy says why, and its health check is Healthy without any
    // (test/argocd: no-gpu-nodes-needed); a worker's waits for its GPU nodes
    expect(find('hub', 'ClusterPolicy', 'cluster-policy').metadata.annotations?.[LABELS.gpuNodesOptional]).toBe('a MultiKueue manager, whose queues run every job on its workers');
    expect(find('lab-a', 'ClusterPolicy', 'cluster-policy').metadata.annotations?.[LABELS.gpuNodesOptional]).toBeUndefined();
    // the manager runs nothing of its own: no flavor of its nodes, no samples
    expect(objectsOf('hub').filter((m) => m.kind === 'ResourceFlavor').map((m) => [m.metadata.name, spec(m)])).toEqual([['multikueue', {}]]);
    expect(views.find((v) => v.name === 'hub')!.folders.map((f) => f.folder)).not.toContain('samples');
    // Kueue reads the kubeconfig Secrets of its namespace, and nothing else
    const role = objectsOf('hub').find((m) => m.kind === 'Role' && m.metadata.namespace === NAMESPACES.kueue)!;
    expect((role as Json).rules).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }]);
    const binding = objectsOf('hub').find((m) => m.kind === 'RoleBinding' && m.metadata.namespace === NAMESPACES.kueue)!;
    expect((binding as Json).roleRef.name).toBe(role.metadata.name);
  });

  it('puts the multiKueue block, the dispatcher and the ClusterProfile gate into the manager\'s Kueue; PyTorchJobs only when every worker serves them', () => {
    const fleet = fleetYaml().multiKueue;
    const provider = fleet.clusterProfile.accessProviders[0];
    const index = new ClusterIndex(views.find((v) => v.name === 'hub')!);
    const [{ config }] = index.kueueConfigurations();
    expect(config.multiKueue).toMatchObject({
      gcInterval: '1m',
      origin: 'multikueue',
      workerLostTimeout: '15m',
      dispatcherName: MULTIKUEUE_DISPATCHERS[fleet.dispatcher as keyof typeof MULTIKUEUE_DISPATCHERS],
      clusterProfile: { accessProviders: [{ name: provider.name, execConfig: { command: provider.command } }] },
    });
    // lab-a has no Training Operator: MultiKueue would never connect to it with the PyTorchJob integration on
    expect(models.get('lab-a')!.description.installs.trainingOperator).toBe('none');
    expect((config.integrations as Json).frameworks).not.toContain('kubeflow.org/pytorchjob');
    const install = JSON.stringify(objectsOf('hub').find((m) => m.kind === 'Application' && m.metadata.name === 'hub-kueue-install'));
    expect(install).toContain(`{"enabled":true,"name":"${CLUSTER_PROFILE_GATE}"}`);
  });

  it('renders on each worker the identity the manager uses there, with the job kinds that worker serves', () => {
    for (const w of ['lab-a', 'lab-b']) {
      const sa = find(w, 'ServiceAccount', 'multikueue-hub');
      expect(sa.metadata.namespace).toBe(NAMESPACES.kueue);
      expect(sa.metadata.labels?.[MULTIKUEUE.managerLabel]).toBe('hub');
      const rules = (find(w, 'ClusterRole', 'multikueue-hub') as Json).rules as Json[];
      const resources = rules.flatMap((r) => r.resources as string[]);
      expect(resources).toEqual(expect.arrayContaining(['jobs', 'mpijobs', 'pods', 'workloads', 'workloads/status', 'clusterqueues', 'localqueues']));
      expect(resources.includes('pytorchjobs')).toBe(models.get(w)!.description.installs.trainingOperator !== 'none');
      expect(rules.flatMap((r) => r.verbs as string[])).not.toContain('*');
      expect((find(w, 'ClusterRoleBinding', 'multikueue-hub') as Json).subjects).toEqual([{ kind: 'ServiceAccount', name: 'multikueue-hub', namespace: NAMESPACES.kueue }]);
    }
  });

  it.skipIf(!HAS_SCHEMAS)('every rendered object validates against the pinned CRDs, and every Kueue object passes the CRDs\' CEL rules', () => {
    for (const name of ['hub', 'lab-a', 'lab-b']) expect(schemaErrors(renderCluster(models.get(name)!)), name).toEqual([]);
    const crd = (plural: string) => crdVersionSchema(path.join(DEFAULT_SCHEMAS, 'kueue', `kueue.x-k8s.io_${plural}.yaml`), 'v1beta2');
    const plurals: Record<string, string> = {
      AdmissionCheck: 'admissionchecks',
      MultiKueueConfig: 'multikueueconfigs',
      MultiKueueCluster: 'multikueueclusters',
      ClusterQueue: 'clusterqueues',
      LocalQueue: 'localqueues',
      ResourceFlavor: 'resourceflavors',
      WorkloadPriorityClass: 'workloadpriorityclasses',
      Topology: 'topologies',
    };
    const evaluated: Record<string, number> = {};
    for (const v of views) {
      for (const m of v.folders.flatMap((f) => f.objects).filter((o) => o.apiVersion === 'kueue.x-k8s.io/v1beta2')) {
        const count = { evaluated: 0 };
        expect(celViolations(crd(plurals[m.kind]), m, count), `${v.name} ${m.kind} ${m.metadata.name}`).toEqual([]);
        evaluated[m.kind] = (evaluated[m.kind] ?? 0) + count.evaluated;
      }
    }
    expect(evaluated.MultiKueueConfig).toBeGreaterThan(0);
    expect(evaluated.MultiKueueCluster).toBeGreaterThan(0);
    expect(evaluated.ClusterQueue).toBeGreaterThan(0);
    // the same rules refuse a worker listed twice and a cluster source of both kinds
    const config = find('hub', 'MultiKueueConfig', 'multikueue');
    expect(celViolations(crd('multikueueconfigs'), { ...config, spec: { clusters: ['lab-a', 'lab-b', 'lab-a'] } }).map((x) => x.message)).toEqual(['must be unique']);
    const cluster = find('hub', 'MultiKueueCluster', 'lab-a');
    const both = { ...cluster, spec: { clusterSource: { kubeConfig: { location: 'x' }, clusterProfileRef: { name: 'y' } } } };
    expect(celViolations(crd('multikueueclusters'), both).map((x) => x.message)).toEqual([expect.stringMatching(/exactly one of the fields in \[kubeConfig clusterProfileRef\]/)]);
  });

  it('a member rendered alone (synth --config) is byte for byte what the whole fleet\'s render holds', () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'mk-one-')), 'dist');
    synth({ configs: [path.join(FLEET_FIXTURE, 'hub.yaml'), path.join(FLEET_FIXTURE, 'lab-a.yaml')], out, schemas: false });
    for (const c of ['hub', 'lab-a']) expect(readTreeFiles(path.join(out, c)), c).toEqual(readTreeFiles(path.join(tree, c)));
  });

  it('writes the fleet page with every kubeconfig Secret\'s command and the token-rotation caveat; never a credential', () => {
    const page = readFileSync(path.join(tree, 'fleet', FLEET_REPORT_FILE), 'utf8');
    expect(page).toContain(kubeconfigSecretCommand('hub', 'multikueue-lab-a', 'lab-a'));
    expect(page).toContain(`kubectl --context lab-a -n ${NAMESPACES.kueue} create token multikueue-hub`);
    expect(page).toMatch(/\*\*Tokens expire\.\*\*/);
    expect(page).toContain('ClusterProfile `kueue-system/lab-b`');
    // every file of the rendered fleet, read with no-credentials' patterns (which find a token pasted into the page)
    const credentials = [...readTreeFiles(tree)].flatMap(([file, text]) => (credentialKind(text) ? [`${file}: ${credentialKind(text)}`] : []));
    expect(credentials).toEqual([]);
    const pasted = page.replace('create token multikueue-hub', `create token multikueue-hub\n\n    token: ${['eyJhbGciOiJSUzI1NiJ9', 'eyJzdWIiOiJzeXN0ZW0ifQ', 'c2lnbmF0dXJlLWJ5dGVz'].join('.')}`);
    expect(credentialKind(pasted)).toMatch(/JSON Web Token/);
  });
});

/** The fleet facts of the rendered fixture with `edit` applied to a copy of its clusters' objects (in memory). */
function factsOf(edit: (byName: Map<string, Manifest[]>) => void = () => {}, drop: readonly string[] = []): MultiKueueFacts[] {
  const copies = views.filter((v) => !drop.includes(v.name))
    .map((v) => ({ ...v, folders: v.folders.map((f) => ({ folder: f.folder, objects: structuredClone([...f.objects]) })) }));
  const byName = new Map(copies.map((v) => [v.name, v.folders.flatMap((f) => f.objects)]));
  edit(byName);
  return copies.flatMap((v) => {
    const facts = multiKueueFacts(v);
    return facts ? [facts] : [];
  });
}

function fleetFindings(facts: readonly MultiKueueFacts[], page?: string) {
  const clusters = new Set(facts.map((f) => f.cluster));
  for (const v of views) if (v.name !== 'fleet' && facts.some((f) => f.cluster === v.name)) clusters.add(v.name);
  return checkFleet({ facts, clusters, complete: true, fleetPage: page ?? readFileSync(path.join(tree, 'fleet', FLEET_REPORT_FILE), 'utf8') });
}

const objectIn = (objects: Manifest[], kind: string, name: string) => objects.find((m) => m.kind === kind && m.metadata.name === name)!;

/** A fleet whose rendered facts or descriptions break one invariant: the rule that must report it, once. */
interface Broken {
  readonly name: string;
  readonly rule: string;
  readonly findings: () => ReturnType<typeof checkFleet>;
  readonly says: RegExp;
}

describe('workers[].server of fleet.yaml: the address the manager reaches a worker at', () => {
  it('travels as an annotation of the worker\'s MultiKueueCluster (the Secret is never rendered) into the fleet facts and the page', () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'mk-server-')), 'dist');
    synth({ clustersDir: fleetCopy(mk((m) => { m.workers[0].server = 'https://lab-a.internal:6443'; })), out, schemas: false });
    const hub = readClusters(out).find((v) => v.name === 'hub')!;
    const cluster = hub.folders.flatMap((f) => f.objects).find((o) => o.kind === 'MultiKueueCluster' && o.metadata.name === 'lab-a')!;
    expect(cluster.metadata.annotations).toEqual({ [MULTIKUEUE.serverAnnotation]: 'https://lab-a.internal:6443' });
    expect(multiKueueFacts(hub)!.clusters.find((c) => c.name === 'lab-a')).toMatchObject({ secret: 'multikueue-lab-a', server: 'https://lab-a.internal:6443' });
    expect(readFileSync(path.join(out, 'fleet', FLEET_REPORT_FILE), 'utf8')).toContain('SERVER=https://lab-a.internal:6443');
  });
});

/** The findings of synth over a copy of the fixture with its descriptions edited (synth fails on them). */
function synthFindings(edits: Record<string, (d: Json) => void>) {
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'mk-broken-')), 'dist');
  try {
    synth({ clustersDir: fleetCopy(edits), out, schemas: false });
  } catch (e) {
    if (e instanceof CheckFailed) return e.findings.filter((f) => f.severity === 'error');
    throw e;
  }
  return [];
}

const BROKEN: Broken[] = [
  {
    name: 'a worker listed twice in the manager\'s MultiKueueConfig',
    rule: 'multikueue-workers',
    findings: () => fleetFindings(factsOf((c) => { spec(objectIn(c.get('hub')!, 'MultiKueueConfig', 'multikueue')).clusters = ['lab-a', 'lab-b', 'lab-a']; })),
    says: /^MultiKueueConfig multikueue: lists worker "lab-a" twice/,
  },
  {
    name: 'a worker missing from the fleet (not rendered)',
    rule: 'multikueue-workers',
    findings: () => fleetFindings(factsOf(() => {}, ['lab-b'])),
    says: /^MultiKueueCluster lab-b: worker "lab-b" is missing from this fleet/,
  },
  {
    name: 'a manager LocalQueue with no mirror on a worker (lab-a without the inference tenant)',
    rule: 'multikueue-queue-mirrored',
    findings: () => synthFindings({ 'lab-a.yaml': (d) => { d.tenants = d.tenants.filter((t: Json) => t.name !== 'inference'); } }),
    says: /has no LocalQueue inference\/inference \(ClusterQueue inference\) of MultiKueue manager "hub"/,
  },
  {
    name: 'the manager\'s nominal GPUs above its workers\' (a hand-edited ClusterQueue)',
    rule: 'multikueue-quota-sum',
    findings: () => fleetFindings(factsOf((c) => {
      const research = objectIn(c.get('hub')!, 'ClusterQueue', 'research');
      const gpu = (spec(research).resourceGroups[0].flavors[0].resources as Json[]).find((r) => r.name === 'nvidia.com/gpu')!;
      gpu.nominalQuota = String(Number(gpu.nominalQuota) + 4);
    })),
    says: /^ClusterQueue research: nominal quota nvidia.com\/gpu 60, but its workers hold 56 \(lab-a research, lab-b research\): more than the workers hold dispatches/,
  },
  {
    name: 'one worker schedules by topology, the other does not',
    rule: 'multikueue-flavors-compatible',
    findings: () => synthFindings({ 'lab-b.yaml': (d) => { d.queueing.topology = { levels: ['kubernetes.io/hostname'] }; } }),
    says: /schedules by topology \(levels kubernetes.io\/hostname\), but the manager's ClusterQueue default has no topology-aware flavor/,
  },
  {
    name: 'the manager integrates PyTorchJobs, which a worker does not serve',
    rule: 'multikueue-worker-apis',
    findings: () => fleetFindings(factsOf((c) => {
      const app = objectIn(c.get('hub')!, 'Application', 'hub-kueue-install');
      Object.assign(app, JSON.parse(JSON.stringify(app).replace('- kubeflow.org/mpijob\\n', '- kubeflow.org/mpijob\\n    - kubeflow.org/pytorchjob\\n')));
    })),
    says: /serves no kubeflow.org\/PyTorchJob, which MultiKueue manager "hub" watches on every worker/,
  },
  {
    name: 'a kubeconfig Secret the fleet page does not name',
    rule: 'multikueue-secret-registration',
    findings: () => fleetFindings(factsOf(), readFileSync(path.join(tree, 'fleet', FLEET_REPORT_FILE), 'utf8').replace(kubeconfigSecretCommand('hub', 'multikueue-lab-a', 'lab-a'), '')),
    says: /^MultiKueueCluster lab-a: the fleet page does not give the command that creates its kubeconfig Secret kueue-system\/multikueue-lab-a/,
  },
];

describe('checks across the fleet', () => {
  it('the fixture fleet breaks none; every fleet rule has a case below', () => {
    expect(fleetFindings(factsOf())).toEqual([]);
    expect(FLEET_RULES.map((r) => r.id).filter((id) => !BROKEN.some((b) => b.rule === id))).toEqual([]);
  });

  it.each(BROKEN)('$name: exactly one finding, $rule', (b) => {
    const findings = b.findings();
    expect(findings.map((f) => f.rule), JSON.stringify(findings, undefined, 2)).toEqual([b.rule]);
    expect(findings[0].message).toMatch(b.says);
  });

  it('check of a rendered tree runs them too, reading the fleet page (exit 1, one line)', async () => {
    const copy = path.join(mkdtempSync(path.join(tmpdir(), 'mk-check-')), 'dist');
    cpSync(tree, copy, { recursive: true });
    const page = path.join(copy, 'fleet', FLEET_REPORT_FILE);
    writeFileSync(page, readFileSync(page, 'utf8').replace(kubeconfigSecretCommand('hub', 'multikueue-lab-a', 'lab-a'), ''));
    // an empty upstream folder: no Application is rendered (the upstream rules say so), the fleet rules run all the same
    const upstream = mkdtempSync(path.join(tmpdir(), 'mk-no-upstream-'));
    const r = await runCliInProcess(['check', copy, '--upstream', upstream, '--quiet'], { cwd: path.dirname(copy) });
    expect(r.stderr.trim().split('\n').filter((l) => l.includes('[multikueue-'))).toEqual([expect.stringMatching(/^error \[multikueue-secret-registration\] hub: MultiKueueCluster lab-a: the fleet page does not give/)]);
    expect(r.code).toBe(EXIT.failed);
    rmSync(path.dirname(copy), { recursive: true, force: true });
    rmSync(upstream, { recursive: true, force: true });
  });
});

/** A broken fleet description: the file it is in, the field path the message must name, a word the message must contain. */
interface BadFleet {
  readonly name: string;
  readonly edits: Record<string, (d: Json) => void>;
  readonly file: string;
  readonly path: string;
  readonly says: RegExp;
}

const mk = (edit: (m: Json) => void) => ({ [FLEET_FILE]: (d: Json) => edit(d.multiKueue) });

const BAD: BadFleet[] = [
  { name: 'unknown field', edits: mk((m) => { m.worker = []; }), file: FLEET_FILE, path: 'multiKueue.worker', says: /unknown field \(did you mean "workers"\?\)/ },
  { name: 'a duration in words', edits: mk((m) => { m.gcInterval = '1 minute'; }), file: FLEET_FILE, path: 'multiKueue.gcInterval', says: /expected a duration such as "1m"/ },
  // what Go's time.ParseDuration refuses (Kueue would not start on its configuration): a sum past int64 nanoseconds
  { name: 'a duration past Go\'s longest', edits: mk((m) => { m.gcInterval = '2562048h'; }), file: FLEET_FILE, path: 'multiKueue.gcInterval', says: /got "2562048h": longer than Go's longest duration \(about 292 years\)/ },
  { name: 'a duration whose digits overflow', edits: mk((m) => { m.gcInterval = '99999999999999999999s'; }), file: FLEET_FILE, path: 'multiKueue.gcInterval', says: /longer than Go's longest duration/ },
  { name: 'a sum of parts past Go\'s longest', edits: mk((m) => { m.workerLostTimeout = '2000000h2000000h'; }), file: FLEET_FILE, path: 'multiKueue.workerLostTimeout', says: /longer than Go's longest duration/ },
  { name: 'nanoseconds one past int64', edits: mk((m) => { m.gcInterval = '9223372036854775808ns'; }), file: FLEET_FILE, path: 'multiKueue.gcInterval', says: /longer than Go's longest duration/ },
  { name: 'a worker with a Secret and a ClusterProfile', edits: mk((m) => { m.workers[1].kubeconfigSecret = 'x'; }), file: FLEET_FILE, path: 'multiKueue.workers[1]', says: /exactly one of kubeconfigSecret/ },
  { name: 'a worker server that is not https', edits: mk((m) => { m.workers[0].server = 'http://lab-a:6443'; }), file: FLEET_FILE, path: 'multiKueue.workers[0].server', says: /expected the https:\/\/ address of the worker's API server/ },
  { name: 'a server for a ClusterProfile worker', edits: mk((m) => { m.workers[1].server = 'https://lab-b:6443'; }), file: FLEET_FILE, path: 'multiKueue.workers[1].server', says: /only with kubeconfigSecret/ },
  { name: 'a manager with no description', edits: mk((m) => { m.manager = 'hubb'; }), file: FLEET_FILE, path: 'multiKueue.manager', says: /no cluster description .* is named "hubb" \(clusters: hub, lab-a, lab-b\)/ },
  { name: 'a worker with no description', edits: mk((m) => { m.workers[0].cluster = 'lab-c'; }), file: FLEET_FILE, path: 'multiKueue.workers[0].cluster', says: /named "lab-c"/ },
  { name: 'a worker listed twice', edits: mk((m) => { m.workers.push({ cluster: 'lab-a', kubeconfigSecret: 'again' }); }), file: FLEET_FILE, path: 'multiKueue.workers[2].cluster', says: /listed twice \(also multiKueue.workers\[0\]\)/ },
  { name: 'the manager as its own worker', edits: mk((m) => { m.workers.push({ cluster: 'hub', kubeconfigSecret: 'self' }); }), file: FLEET_FILE, path: 'multiKueue.workers[2].cluster', says: /is the manager/ },
  { name: 'workers of a queue the manager does not have', edits: mk((m) => { m.queues = { researh: ['lab-a'] }; }), file: FLEET_FILE, path: 'multiKueue.queues.researh', says: /no ClusterQueue of the manager hub \(its ClusterQueues: default, research, inference\)/ },
  { name: 'a queue\'s worker not among the workers', edits: mk((m) => { m.queues = { research: ['lab-z'] }; }), file: FLEET_FILE, path: 'multiKueue.queues.research[0]', says: /"lab-z" is not in multiKueue.workers/ },
  { name: 'a ClusterProfile without access providers', edits: mk((m) => { delete m.clusterProfile; }), file: FLEET_FILE, path: 'multiKueue.workers[1].clusterProfile', says: /needs multiKueue.clusterProfile.accessProviders/ },
  {
    name: 'a Kueue setting for a pre-installed Kueue',
    edits: { ...mk((m) => { m.workerLostTimeout = '5m'; m.workers[1] = { cluster: 'lab-b', kubeconfigSecret: 'multikueue-lab-b' }; delete m.clusterProfile; delete m.dispatcher; }), 'hub.yaml': (d) => { delete d.installs; } },
    file: FLEET_FILE,
    path: 'multiKueue.workerLostTimeout',
    says: /renders only for a Kueue it installs: set installs.kueue: managed in hub.yaml/,
  },
  { name: 'a manager tenant with GPUs of its own', edits: { 'hub.yaml': (d) => { d.tenants[0].gpus = 8; } }, file: 'hub.yaml', path: 'tenants[0].gpus', says: /sum of their workers' quotas .* set 0/ },
  { name: 'a manager with a topology', edits: { 'hub.yaml': (d) => { d.queueing = { topology: { levels: ['kubernetes.io/hostname'] } }; } }, file: 'hub.yaml', path: 'queueing.topology', says: /describe the topology on the workers/ },
];

function run(args: string[]): { code: number; stderr: string } {
  let stderr = '';
  const code = main(args, { out: () => undefined, err: (l) => { stderr += `${l}\n`; } }) as number;
  return { code, stderr };
}

describe('a broken fleet description exits 2, naming the file, line and column and the field path', () => {
  it.each(BAD)('$name -> $file $path', (c) => {
    const dir = fleetCopy(c.edits);
    const r = run(['synth', '--config', path.join(dir, 'hub.yaml'), '--config', path.join(dir, 'lab-a.yaml'), '--out', path.join(dir, '..', 'out'), '--no-validate']);
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.every((l) => /^\/.*\.yaml:(\d+:\d+ )?/.test(l)), r.stderr).toBe(true);
    const file = path.join(dir, c.file);
    const line = lines.find((l) => l.startsWith(`${file}:`) && new RegExp(`^[^ ]+:\\d+:\\d+ ${c.path.replace(/[.[\]]/g, '\\$&')}: `).test(l));
    expect(line, r.stderr).toBeDefined();
    expect(line).toMatch(c.says);
  });

  it('more than 20 workers on one MultiKueueConfig: their queues must list their own (at most 20 each)', () => {
    const dir = fleetCopy();
    const lab = parse(readFileSync(path.join(dir, 'lab-a.yaml'), 'utf8')) as Json;
    const workers = Array.from({ length: 21 }, (_, i) => `lab-${String(i + 1).padStart(2, '0')}`);
    for (const w of workers) writeFileSync(path.join(dir, `${w}.yaml`), stringify({ ...lab, name: w, gitops: { ...lab.gitops, path: `dist/${w}` } }));
    const fleet = { multiKueue: { manager: 'hub', workers: workers.map((w) => ({ cluster: w, kubeconfigSecret: `multikueue-${w}` })) } };
    writeFileSync(path.join(dir, FLEET_FILE), stringify(fleet));
    const r = run(['synth', '--config', path.join(dir, 'hub.yaml'), '--out', path.join(dir, '..', 'out'), '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/fleet.yaml:3:3 multiKueue.workers: 21 workers, but a MultiKueueConfig holds at most 20, and ClusterQueue\(s\) default, research, inference of the manager/);
    // each queue with its own workers: one AdmissionCheck and MultiKueueConfig per queue
    const queues = { default: workers.slice(0, 20), research: workers.slice(1), inference: workers.slice(0, 5) };
    writeFileSync(path.join(dir, FLEET_FILE), stringify({ multiKueue: { ...fleet.multiKueue, queues } }));
    const [hub] = loadModels([path.join(dir, 'hub.yaml')]);
    const role = hub.multiKueue!;
    expect(role.role === 'manager' && role.groups.map((g) => [g.name, g.workers.length])).toEqual([['multikueue-default', 20], ['multikueue-research', 20], ['multikueue-inference', 5]]);
  });

  it('a cluster description in fleet.yaml is told apart', () => {
    const dir = fleetCopy();
    cpSync(path.join(dir, 'lab-a.yaml'), path.join(dir, FLEET_FILE));
    const r = run(['synth', '--config', path.join(dir, 'lab-a.yaml'), '--out', path.join(dir, '..', 'out'), '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/fleet.yaml:\d+:\d+ fleet.yaml is the fleet description \(multiKueue:\), never a cluster's/);
  });
});
