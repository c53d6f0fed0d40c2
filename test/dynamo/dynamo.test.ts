import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ClusterIndex } from '../../src/check/cluster-index';
import { checkCluster, checkClusterRendered, RULES } from '../../src/check/engine';
import { dynamoPlatformHelmValues } from '../../src/components/dynamo/helm-values';
import { managedInstalls } from '../../src/components/gitops/managed-installs';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { clusterReport } from '../../src/report/report';
import { SchemaStore } from '../../src/validate/schemas';
import { VERSIONS } from '../../src/versions';
import { celViolations, crdVersionSchema } from '../crd-cel';
import { Edit, findObject, folderObjects, HAS_SCHEMAS, HAS_UPSTREAM, issuesOf, modelOf, renderOf, SHARED, strictErrors } from '../helpers';

/** The DynamoGraphDeployment CRD of the Dynamo release the samples are written for. */
const DGD_CRD = path.join(DEFAULT_SCHEMAS, VERSIONS.dynamo.graphDeploymentCrd);
const CHART_DIR = path.join(SHARED, 'upstream-installs', 'dynamo-platform-1.4.0-branchpoint', 'deploy', 'helm', 'charts', 'platform');
const HAS_CHART = existsSync(path.join(CHART_DIR, 'values.yaml'));

/** The platform in `mode` and its samples (the tutorial, opt-in) on. */
const dynamo = (mode: string, more: Edit = () => {}): Edit => (d) => {
  d.installs = { ...(d.installs ?? {}), dynamo: mode };
  d.tutorials = { ...d.tutorials, dynamo: { ...d.tutorials?.dynamo, enabled: true } };
  more(d);
};
const graphs = (edit: Edit) => folderObjects(renderOf(edit), 'dynamo') as (Manifest & { spec: any })[];
const apps = (edit: Edit) => folderObjects(renderOf(edit), 'gitops').filter((m) => m.kind === 'Application');

describe('installs.dynamo', () => {
  it('"none" (the default) renders nothing of Dynamo', () => {
    const c = renderOf();
    expect(c.model.description.installs.dynamo).toBe('none');
    expect(c.folders.map((f) => f.folder)).not.toContain('dynamo');
    expect(JSON.stringify(c.folders)).not.toMatch(/dynamo/i);
  });

  it('the samples are a tutorial, opt-in: without tutorials.dynamo.enabled a managed platform is installed and no sample rendered', () => {
    const c = renderOf((d) => { d.installs = { dynamo: 'managed' }; });
    expect(c.folders.map((f) => f.folder)).not.toContain('dynamo');
    expect(folderObjects(c, 'gitops').map((a) => a.metadata.name)).toContain('instant-cluster-dynamo-platform-install');
    expect(issuesOf((d) => { d.tutorials = { dynamo: { enabled: true } }; })).toEqual([{
      path: 'tutorials.dynamo.enabled',
      message: 'the Dynamo samples need the Dynamo platform: set installs.dynamo to "preinstalled" (the cluster runs it) or "managed" (installed here)',
    }]);
  });

  it('"preinstalled" renders the samples only, "managed" the platform Application too', () => {
    expect(graphs(dynamo('preinstalled')).map((m) => m.metadata.name)).toEqual(['vllm-agg', 'vllm-disagg']);
    expect(apps(dynamo('preinstalled')).map((a) => a.metadata.name)).not.toContain('instant-cluster-dynamo-platform-install');
    const app = findObject(apps(dynamo('managed')), 'Application', 'instant-cluster-dynamo-platform-install') as Manifest & { spec: any };
    const v = VERSIONS.dynamoPlatform;
    expect(app.spec.source).toMatchObject({ chart: v.chart, repoURL: v.repoURL, targetRevision: v.version });
    expect(app.spec.destination.namespace).toBe('dynamo-system');
    // The chart renders no CRD (the operator applies them): nothing it applies is too large for client-side apply.
    expect(app.spec.syncPolicy.syncOptions).toEqual(['CreateNamespace=true', 'ServerSideApply=true']);
  });

  it('never syncs the samples automatically, and syncs them after the platform', () => {
    const all = apps(dynamo('managed')) as (Manifest & { spec: any })[];
    const samples = findObject(all, 'Application', 'instant-cluster-dynamo') as Manifest & { spec: any };
    expect(samples.spec.syncPolicy?.automated).toBeUndefined();
    const wave = (a: Manifest) => Number(a.metadata.annotations?.['argocd.argoproj.io/sync-wave']);
    expect(wave(samples)).toBeGreaterThan(wave(findObject(all, 'Application', 'instant-cluster-dynamo-platform-install')));
  });

  it('lets the AppProject write the platform\'s namespace and cluster-scoped kinds', () => {
    const project = folderObjects(renderOf(dynamo('managed')), 'gitops').find((m) => m.kind === 'AppProject') as Manifest & { spec: any };
    expect(project.spec.destinations.map((x: any) => x.namespace)).toContain('dynamo-system');
    const kinds = project.spec.clusterResourceWhitelist.map((x: any) => `${x.group}/${x.kind}`);
    for (const k of ['apiextensions.k8s.io/CustomResourceDefinition', 'rbac.authorization.k8s.io/ClusterRole', 'admissionregistration.k8s.io/ValidatingWebhookConfiguration', '/Namespace']) {
      expect(kinds).toContain(k);
    }
  });

  it('puts the operator on the service node', () => {
    const model = modelOf(dynamo('managed'));
    const values = dynamoPlatformHelmValues(model);
    expect(values['dynamo-operator'].controllerManager.tolerations).toEqual(model.serviceNode.tolerations);
    const terms = values['dynamo-operator'].controllerManager.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    expect(terms[0].matchExpressions.map((e) => e.key)).toEqual(Object.keys(model.serviceNode.selector));
    expect(() => dynamoPlatformHelmValues(modelOf(dynamo('preinstalled')))).toThrow(/installs.dynamo is "preinstalled"/);
    expect(managedInstalls(model).map((i) => i.key)).toContain('dynamo');
  });

  it.skipIf(!HAS_CHART)('sets only values the pinned chart has, and pins the chart\'s version', () => {
    const chart = parse(readFileSync(path.join(CHART_DIR, 'Chart.yaml'), 'utf8'));
    expect(chart.name).toBe(VERSIONS.dynamoPlatform.chart);
    expect(chart.version).toBe(VERSIONS.dynamoPlatform.version);
    const upstream = parse(readFileSync(path.join(CHART_DIR, 'values.yaml'), 'utf8'));
    const leaves = (o: unknown, at: string[] = []): string[][] => (o !== null && typeof o === 'object' && !Array.isArray(o) && Object.keys(o).length > 0
      && !['tolerations', 'affinity'].includes(at[at.length - 1] ?? '')
      ? Object.entries(o).flatMap(([k, v]) => leaves(v, [...at, k])) : [at]);
    // a value of the operator subchart is in the parent's values or in the subchart's own
    const operator = parse(readFileSync(path.join(CHART_DIR, 'charts', 'dynamo-operator', 'values.yaml'), 'utf8'));
    const at = (root: unknown, keys: string[]) => keys.reduce<any>((node, k) => (node === undefined ? undefined : node[k]), root);
    for (const leaf of leaves(dynamoPlatformHelmValues(modelOf(dynamo('managed'))))) {
      const found = at(upstream, leaf) ?? (leaf[0] === 'dynamo-operator' ? at(operator, leaf.slice(1)) : undefined);
      expect(found, leaf.join('.')).not.toBeUndefined();
    }
  });
});

describe('Dynamo samples', () => {
  it('run in the inference tenant\'s namespace, every component pod queued there', () => {
    const c = renderOf(dynamo('preinstalled'));
    const index = new ClusterIndex(c);
    const graphsFound = folderObjects(c, 'dynamo');
    expect(graphsFound.length).toBe(2);
    for (const g of graphsFound) {
      expect(g.metadata.namespace).toBe('inference');
      const components = (g as any).spec.components as { name: string }[];
      const templates = index.podTemplates(g);
      // one pod template per component, each at that component's podTemplate
      expect(templates.map((t) => t.path)).toEqual(components.map((_, i) => `spec.components[${i}].podTemplate.spec`));
      for (const t of templates) {
        const queue = t.labels['kueue.x-k8s.io/queue-name'];
        expect(queue, t.path).toBe('inference');
        const localQueue = index.find('LocalQueue', queue, g.metadata.namespace);
        if (!localQueue) throw new Error(`${g.metadata.name} ${t.path}: no LocalQueue ${queue} in ${g.metadata.namespace}`);
        expect(localQueue.metadata, t.path).toMatchObject({ name: queue, namespace: g.metadata.namespace });
      }
    }
  });

  it('fall back to namespace "default" without an inference tenant, and name an unknown tenant by field', () => {
    const none = graphs(dynamo('preinstalled', (d) => { d.tenants = d.tenants.filter((t: any) => t.name !== 'inference'); }));
    expect(none.map((g) => g.metadata.namespace)).toEqual(['default', 'default']);
    const chosen = graphs(dynamo('preinstalled', (d) => { d.tutorials.dynamo.tenant = 'research'; }));
    expect(chosen.map((g) => g.metadata.namespace)).toEqual(['research', 'research']);
    expect(issuesOf(dynamo('preinstalled', (d) => { d.tutorials.dynamo.tenant = 'nobody'; })))
      .toEqual([{ path: 'tutorials.dynamo.tenant', message: expect.stringContaining('no tenant is named "nobody"') }]);
  });

  it('aggregated: a frontend and one one-GPU worker; disaggregated: prefill and decode over RDMA with IPC_LOCK', () => {
    const [agg, disagg] = graphs(dynamo('preinstalled'));
    const gpus = (comp: any) => Number(comp.podTemplate.spec.containers[0].resources.limits['nvidia.com/gpu'] ?? 0);
    expect(agg.spec.components.map((x: any) => [x.type, gpus(x)])).toEqual([['frontend', 0], ['worker', 1]]);
    expect(disagg.spec.components.map((x: any) => [x.type, gpus(x)])).toEqual([['frontend', 0], ['decode', 1], ['prefill', 1]]);
    for (const w of disagg.spec.components.slice(1)) {
      const main = w.podTemplate.spec.containers[0];
      expect(main.resources.limits['rdma/rdma_shared_device_a']).toBe('1');
      expect(main.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { add: ['IPC_LOCK'] } });
      expect(main.args).toContain('Qwen/Qwen3-0.6B');
    }
    expect(agg.spec.components[1].podTemplate.spec.containers[0].resources.limits).not.toHaveProperty('rdma/rdma_shared_device_a');
  });

  it('take the model and image from the description, and only the aggregated one without InfiniBand', () => {
    const custom = graphs(dynamo('preinstalled', (d) => { Object.assign(d.tutorials.dynamo, { model: 'meta-llama/Llama-3.1-8B-Instruct', image: 'example.com/vllm-runtime:2.0.0' }); }));
    const images = custom.flatMap((g) => g.spec.components.map((x: any) => x.podTemplate.spec.containers[0].image));
    expect(new Set(images)).toEqual(new Set(['example.com/vllm-runtime:2.0.0']));
    expect(custom[0].spec.components[1].podTemplate.spec.containers[0].args).toEqual(['--model', 'meta-llama/Llama-3.1-8B-Instruct']);
    expect(issuesOf(dynamo('preinstalled', (d) => { d.tutorials.dynamo.image = 'example.com/vllm-runtime:latest'; })).map((i) => i.path))
      .toEqual(['tutorials.dynamo.image']);
    const noIb = graphs(dynamo('preinstalled', (d) => { delete d.network.infiniband; }));
    expect(noIb.map((g) => g.metadata.name)).toEqual(['vllm-agg']);
  });

  it('pass the queue-label, resource-coverage and quota rules; a sample requesting an uncovered resource does not', () => {
    const c = renderOf(dynamo('managed'));
    const rules = ['queue-label-target', 'queue-resource-coverage', 'no-privileged', 'image-pinned'];
    expect(checkCluster(c).filter((f) => rules.includes(f.rule))).toEqual([]);
    const broken = structuredClone(findObject(folderObjects(c, 'dynamo'), 'DynamoGraphDeployment', 'vllm-agg')) as any;
    broken.spec.components[1].podTemplate.spec.containers[0].resources.requests['ephemeral-storage'] = '2Gi';
    const folders = c.folders.map((f) => (f.folder === 'dynamo' ? { ...f, objects: [broken] } : f));
    expect(checkCluster({ ...c, folders }).filter((f) => f.rule === 'queue-resource-coverage').map((f) => f.objects[0]))
      .toEqual(['DynamoGraphDeployment inference/vllm-agg']);
  });

  it('run a runtime of the platform\'s release: another release is a check error (synth runs it), managed or pre-installed', () => {
    const image = (tag: string): Edit => (d) => { d.tutorials.dynamo.image = `${VERSIONS.dynamo.registry}/vllm-runtime:${tag}`; };
    const pairing = (mode: string, tag: string) => checkCluster(renderOf(dynamo(mode, image(tag)))).filter((f) => f.rule === 'dynamo-image-release');
    for (const mode of ['managed', 'preinstalled']) {
      expect(pairing(mode, VERSIONS.dynamo.release), mode).toEqual([]);
      expect(pairing(mode, `${VERSIONS.dynamo.release}-efa`), mode).toEqual([]);
      const found = pairing(mode, '1.2.0-post.1');
      // one finding per graph, naming every component that runs the image
      expect(found.map((f) => f.objects[0]), mode).toEqual(['DynamoGraphDeployment inference/vllm-agg', 'DynamoGraphDeployment inference/vllm-disagg']);
      expect(found[1].message).toMatch(/runs \S+:1.2.0-post.1 \(spec.components\[0\]\S+, spec.components\[1\]\S+, spec.components\[2\]\S+\)/);
      expect(found[0].message, mode).toMatch(mode === 'managed'
        ? /vllm-runtime:1.2.0-post.1 \(.*\), but the Dynamo platform is release 1.4.0 \(Application instant-cluster-dynamo-platform-install installs chart dynamo-platform 1.4.0\)/
        : /vllm-runtime:1.2.0-post.1 \(.*\), but the Dynamo platform is release 1.4.0 \(no Application installs the dynamo-platform chart: a pre-installed platform of the release the toolkit pins\)/);
    }
  });

  it.skipIf(!HAS_SCHEMAS)('validate strictly against the release\'s DynamoGraphDeployment CRD (schema), which serves their apiVersion', () => {
    const objects = folderObjects(renderOf(dynamo('managed')), 'dynamo');
    expect(objects.length).toBe(2);
    expect(strictErrors(objects)).toEqual([]);
    // The schema folder also has a later main's CRD of the same kind: the release's file must win.
    const store = SchemaStore.open(DEFAULT_SCHEMAS, { cacheDir: false });
    const crd = parse(readFileSync(DGD_CRD, 'utf8'));
    for (const g of objects) {
      expect(store.lookup(g.apiVersion, g.kind)?.source).toBe(DGD_CRD);
      const [group, version] = g.apiVersion.split('/');
      expect([crd.spec.group, crd.spec.names.kind]).toEqual([group, g.kind]);
      expect(crd.spec.versions.find((v: any) => v.name === version)?.served).toBe(true);
    }
  });

  it.skipIf(!existsSync(DGD_CRD))('pass every create-time CEL rule of the vendored CRD, which do fire on a broken graph', () => {
    const schema = crdVersionSchema(DGD_CRD, 'v1beta1');
    const count = { evaluated: 0 };
    for (const g of folderObjects(renderOf(dynamo('preinstalled')), 'dynamo')) expect(celViolations(schema, g, count)).toEqual([]);
    expect(count.evaluated).toBeGreaterThan(10);
    const broken = structuredClone(graphs(dynamo('preinstalled'))[1]);
    broken.spec.components[2].name = 'vllmdecodeworker';
    broken.spec.restart = { id: 'now' };
    broken.spec.components[0].podTemplate.spec.initContainers = [{ name: 'init', image: '' }];
    expect(celViolations(schema, broken).map((v) => v.message).sort()).toEqual([
      'component names must be unique case-insensitively',
      'init containers must specify a non-empty image',
      'spec.restart must be unset on create; set spec.restart.id after creation to request a restart',
    ]);
  });
});

/** An upstream example vendored under fixtures/: the header names its origin and the git blob of the bytes after the marker line. */
function upstreamExample(file: string): { readonly blob: string; readonly body: string; readonly doc: any } {
  const text = readFileSync(path.join(__dirname, 'fixtures', file), 'utf8');
  const marker = text.indexOf('\n# ---- upstream file below');
  const body = text.slice(text.indexOf('\n', marker + 1) + 1);
  return { blob: /^# Git blob: ([0-9a-f]{40})/m.exec(text)![1], body, doc: parse(body) };
}

const gitBlobId = (bytes: string) => createHash('sha1').update(`blob ${Buffer.byteLength(bytes)}\0`).update(bytes).digest('hex');
const imageRepository = (image: string) => image.slice(0, image.lastIndexOf(':'));
const imageTag = (image: string) => image.slice(image.lastIndexOf(':') + 1);
const mainContainer = (component: any) => component.podTemplate.spec.containers.find((c: any) => c.name === 'main');

/** What must agree with upstream's example: the graph, each component, and its main container's command, args, image and GPUs. */
function servingShape(graph: any) {
  return {
    apiVersion: graph.apiVersion,
    kind: graph.kind,
    name: graph.metadata.name,
    components: graph.spec.components.map((c: any) => {
      const main = mainContainer(c);
      return {
        name: c.name,
        type: c.type,
        replicas: c.replicas,
        command: main.command,
        args: main.args,
        workingDir: main.workingDir,
        imageRepository: imageRepository(main.image),
        gpus: main.resources?.limits?.['nvidia.com/gpu'],
      };
    }),
  };
}

describe('the Dynamo samples match the release\'s upstream examples', () => {
  const examples = { 'vllm-agg': 'vllm-agg.upstream.yaml', 'vllm-disagg': 'vllm-disagg.upstream.yaml' };

  it('vendored byte for byte (the git blob named in each header)', () => {
    for (const file of Object.values(examples)) {
      const { blob, body } = upstreamExample(file);
      expect(gitBlobId(body), file).toBe(blob);
    }
  });

  it('component by component: names, types, replicas, command, args (KV transfer on both disaggregated workers), image, GPUs', () => {
    const ours = graphs(dynamo('preinstalled'));
    expect(ours.map((g) => g.metadata.name)).toEqual(Object.keys(examples));
    for (const g of ours) {
      const upstream = upstreamExample(examples[g.metadata.name as keyof typeof examples]).doc;
      expect(servingShape(g), g.metadata.name).toEqual(servingShape(upstream));
      // Upstream names the Hugging Face token secret where the pod needs it (envFrom); ours reads its HF_TOKEN key there
      // (optional), through env: the tenant guardrails refuse an envFrom without a prefix.
      for (const [i, c] of upstream.spec.components.entries()) {
        const upstreamSecrets = (mainContainer(c).envFrom ?? []).map((e: any) => e.secretRef?.name);
        const main = mainContainer(g.spec.components[i]);
        expect(main.envFrom, c.name).toBeUndefined();
        const secrets = (main.env ?? []).map((e: any) => e.valueFrom?.secretKeyRef).filter((r: any) => r?.key === 'HF_TOKEN').map((r: any) => r.name);
        expect(secrets, c.name).toEqual(expect.arrayContaining(upstreamSecrets));
      }
    }
  });

  it('run the release\'s runtime image, which upstream published with the release the platform chart carries', () => {
    const image = modelOf().description.tutorials.dynamo.image;
    expect(image).toBe(VERSIONS.dynamo.vllmRuntimeImage);
    const images = graphs(dynamo('preinstalled')).flatMap((g) => g.spec.components.map((c: any) => mainContainer(c).image));
    expect(new Set(images)).toEqual(new Set([image]));
    expect(imageTag(image)).toBe(VERSIONS.dynamo.release);
  });

  it.skipIf(!HAS_UPSTREAM)('pin the release of the vendored platform chart, whose SOURCES.md lists the image as published with it', () => {
    const folder = `dynamo-platform-${VERSIONS.dynamo.release}-branchpoint`;
    const platform = path.join(DEFAULT_UPSTREAM, folder, 'deploy', 'helm', 'charts', 'platform');
    expect(parse(readFileSync(path.join(platform, 'Chart.yaml'), 'utf8')).version).toBe(VERSIONS.dynamo.release);
    // The operator image (and the CRDs its crd-apply init container installs) is tagged with the operator chart's appVersion.
    expect(parse(readFileSync(path.join(platform, 'charts', 'dynamo-operator', 'Chart.yaml'), 'utf8')).appVersion).toBe(VERSIONS.dynamo.release);
    const sources = readFileSync(path.join(DEFAULT_UPSTREAM, 'SOURCES.md'), 'utf8');
    const section = sources.slice(sources.indexOf(`## ${folder}/`), sources.indexOf('\n## ', sources.indexOf(`## ${folder}/`) + 1));
    expect(section).toMatch(/^- Runtime images published with v/m);
    expect(section).toContain(`\`${VERSIONS.dynamo.vllmRuntimeImage}\``);
  });

  it.skipIf(!HAS_UPSTREAM)('record exactly the images SOURCES.md quotes from the release\'s artifact inventory (VERSIONS.dynamo.publishedImages)', () => {
    const folder = `dynamo-platform-${VERSIONS.dynamo.release}-branchpoint`;
    const sources = readFileSync(path.join(DEFAULT_UPSTREAM, 'SOURCES.md'), 'utf8');
    const section = sources.slice(sources.indexOf(`## ${folder}/`), sources.indexOf('\n## ', sources.indexOf(`## ${folder}/`) + 1));
    const bullet = /^- Runtime images published with v.*$/m.exec(section)![0];
    // `registry/path/name:tag` names a repository; `:tag` another tag of it; `name:tag` another image of its registry path
    const listed = new Map<string, string[]>();
    let repository: string | undefined;
    for (const [, token] of bullet.matchAll(/`([^`]+)`/g)) {
      const ref = /^(?:(.*\/)?([\w.-]+))?:([\w.-]+)$/.exec(token);
      if (!ref) continue;
      const [, dir, name, tag] = ref;
      if (dir !== undefined) repository = `${dir}${name}`;
      else if (name !== undefined) repository = `${repository!.slice(0, repository!.lastIndexOf('/'))}/${name}`;
      listed.set(repository!, [...(listed.get(repository!) ?? []), tag]);
    }
    expect(listed.size).toBeGreaterThan(3);
    expect(Object.fromEntries(listed)).toEqual(VERSIONS.dynamo.publishedImages);
  });
});

describe('the cluster report lists the tutorials and the quota they take', () => {
  it('names each Dynamo sample with its pods, GPUs and RDMA, and each SkyPilot namespace with its files', () => {
    const report = clusterReport(renderOf(dynamo('managed', (d) => { d.tutorials.skypilot = { enabled: true }; })));
    expect(report).toContain('## Tutorials');
    expect(report).toMatch(/\[vllm-agg\]\(dynamo\/dynamographdeployment\.inference\.vllm-agg\.yaml\) \| `inference` \/ `inference` \| 2 \| 1 GPU, /);
    expect(report).toMatch(/\[vllm-disagg\][^\n]*\| 3 \| 2 GPUs, [^\n]*, 2 RDMA \|/);
    expect(report).toContain('[config.yaml](tutorials/skypilot/research/config.yaml)');
    expect(report).toContain('svc/vllm-agg-frontend 8000:8000');
    expect(clusterReport(renderOf())).toContain('Not rendered (`tutorials.dynamo.enabled: false`)');
  });

  it('says who applies the Dynamo CRDs: the operator\'s crd-apply init container, not the chart', () => {
    expect(clusterReport(renderOf(dynamo('managed')))).toContain('the operator\'s `crd-apply` init container applies the CRDs shipped in its image');
    expect(clusterReport(renderOf(dynamo('preinstalled')))).toContain('its operator, which applies the CRDs shipped in its image');
  });
});

describe.skipIf(!HAS_UPSTREAM)('sync-wave-order (synth) and crd-before-cr (engines) agree on which Application brings Dynamo\'s kinds', () => {
  const ORDER_RULES = RULES.filter((r) => r.id === 'sync-wave-order' || r.id === 'crd-before-cr');

  /** The findings of both rules with the dynamo folder's Application moved to wave -1, before every install. */
  async function findings(edit: Edit): Promise<Map<string, string[][]>> {
    const c = renderOf(edit);
    const folders = c.folders.map((f) => ({ folder: f.folder, objects: structuredClone(f.objects) as any[] }));
    const gitops = folders.find((f) => f.folder === 'gitops')!.objects;
    const samples = gitops.find((o) => o.kind === 'Application' && o.metadata.name === `${c.name}-dynamo`)!;
    samples.metadata.annotations['argocd.argoproj.io/sync-wave'] = '-1';
    const view = { name: c.name, model: c.model, folders };
    const { findings: found } = await checkClusterRendered(view, { upstream: DEFAULT_UPSTREAM, rules: ORDER_RULES });
    const byRule = new Map<string, string[][]>(ORDER_RULES.map((r) => [r.id, []]));
    for (const f of found) byRule.get(f.rule)!.push([...f.objects]);
    return byRule;
  }

  it('GPU Operator pre-installed, Dynamo managed: both name the platform install as what the samples must follow', async () => {
    const found = await findings(dynamo('managed'));
    const pair = ['Application argocd/instant-cluster-dynamo', 'Application argocd/instant-cluster-dynamo-platform-install'];
    expect(found.get('sync-wave-order')).toEqual([pair]);
    // crd-before-cr reports each object: the samples' two DynamoGraphDeployments (vllm-agg, vllm-disagg)
    expect(found.get('crd-before-cr')).toEqual([pair, pair]);
  });

  it('GPU Operator managed, Dynamo pre-installed: neither ties the samples to the GPU Operator, whose kinds of nvidia.com are not Dynamo\'s', async () => {
    const found = await findings(dynamo('preinstalled', (d) => { d.installs.gpuOperator = 'managed'; }));
    expect(found.get('sync-wave-order')).toEqual([]);
    expect(found.get('crd-before-cr')).toEqual([]);
  });
});
