// @vitest-environment jsdom
// Mermaid's parser sanitizes labels with DOMPurify, which needs a DOM: jsdom provides one.
import { describe, expect, it } from 'vitest';
import { nominalQuota } from '../../src/check';
import { RESOURCES } from '../../src/model/names';
import { Manifest } from '../../src/render/manifest';
import { Flowchart, label, nodeId } from '../../src/report/mermaid';
import { clusterReport, REPORT_FILE } from '../../src/report/report';
import { clusterFiles } from '../../src/synth/layout';
import { folderObjects, renderOf } from '../helpers';

function mermaidBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
}

async function parseMermaid(text: string): Promise<unknown> {
  const { default: mermaid } = await import('mermaid');
  return mermaid.parse(text);
}

const cluster = renderOf();
const report = clusterReport(cluster);
const objects = cluster.folders.flatMap((f) => f.objects);

describe('the cluster report (dist/<cluster>/README.md)', () => {
  it('is one of the rendered files', () => {
    expect(clusterFiles(cluster)).toContainEqual([`${cluster.name}/${REPORT_FILE}`, report]);
  });

  it('has the two Mermaid diagrams, and both parse with Mermaid\'s own parser', async () => {
    const blocks = mermaidBlocks(report);
    expect(blocks).toHaveLength(2);
    for (const b of blocks) await expect(parseMermaid(b)).resolves.toMatchObject({ diagramType: 'flowchart-v2' });
  });

  it('the parser used here rejects a broken flowchart (so the check above can fail)', async () => {
    await expect(parseMermaid('flowchart LR\n  a["x"] -> b\n')).rejects.toThrow(/Parse error/);
    await expect(parseMermaid('flowchart LR\n  cq-research["x"] --> b(\n')).rejects.toThrow();
  });

  it('keeps node ids simple and every label quoted (GitHub and GitLab render it without plugins)', () => {
    for (const b of mermaidBlocks(report)) {
      for (const line of b.trim().split('\n').slice(1)) {
        const t = line.trim();
        if (t === 'end') continue;
        expect(t, line).toMatch(/^(subgraph [A-Za-z0-9_]+\["[^"]*"\]|[A-Za-z0-9_]+(\(\[|\[|\()"[^"]*"(\]\)|\]|\))|[A-Za-z0-9_]+ --> [A-Za-z0-9_]+)$/);
      }
    }
    expect(nodeId('lq', 'research', 'default')).toBe('lq_research_default');
    expect(label('say "hi"', 'x')).toBe('"say #quot;hi#quot;<br/>x"');
    expect(new Flowchart().node('a', ['A']).node('a', ['A again']).edge('a', 'a').toMarkdown()).toBe('```mermaid\nflowchart LR\n  a["A"]\n  a --> a\n```');
  });

  it('is consistent with the manifests: every queue, quota and Application appears as rendered', () => {
    const [queues, waves] = mermaidBlocks(report);
    const clusterQueues = objects.filter((m) => m.kind === 'ClusterQueue');
    expect(clusterQueues.length).toBeGreaterThan(0);
    let total = 0;
    for (const cq of clusterQueues) {
      const gpus = nominalQuota(cq, RESOURCES.gpu);
      total += gpus;
      expect(queues).toContain(`["ClusterQueue ${cq.metadata.name}<br/>${gpus} GPUs nominal"]`);
      expect(report).toMatch(new RegExp(`^\\| \`${cq.metadata.name}\` \\| ${(cq.spec as { cohortName: string }).cohortName} \\| .* \\| ${gpus} \\|`, 'm'));
    }
    expect(total).toBe(cluster.model.capacity.gpus);
    expect(report).toContain(`**${total}** of the cluster's **${cluster.model.capacity.gpus}** GPUs`);
    for (const lq of objects.filter((m) => m.kind === 'LocalQueue')) {
      expect(queues).toContain(`lq_${lq.metadata.namespace}_${lq.metadata.name}("LocalQueue ${lq.metadata.name}")`);
      expect(queues).toContain(`ns_${lq.metadata.namespace}(["namespace ${lq.metadata.namespace}"])`);
    }
    for (const app of folderObjects(cluster, 'gitops').filter((m) => m.kind === 'Application')) {
      const wave = app.metadata.annotations?.['argocd.argoproj.io/sync-wave'] ?? '0';
      expect(waves).toMatch(new RegExp(`subgraph wave_${wave}\\["wave ${wave}"\\]\\n(    .*\\n)*    app_${nodeId(app.metadata.name)}\\["${app.metadata.name}<br/>`));
    }
    for (const job of objects.filter((m) => m.kind === 'MPIJob')) expect(report).toContain(`dist/instant-cluster/samples/mpijob.default.${job.metadata.name}.yaml`);
  });

  it('shows the add-ons as described: managed ones name the Argo CD Application that installs them', () => {
    expect(report).toContain('| Kueue | preinstalled | comes with the node image; only its configuration is rendered here |');
    const managed = clusterReport(renderOf((d) => { d.installs = { kueue: 'managed' }; }));
    expect(managed).toMatch(/^\| Kueue \| managed \| Argo CD Application `instant-cluster-kueue-install` \|$/m);
  });

  it('fills a per-node template in on the way to kubectl (sed), never creates it as it is', () => {
    const file = 'dist/instant-cluster/samples/mpijob.default.nccl-node-check-replace-with-node-name.yaml';
    expect(report).toContain(`sed "s/replace-with-node-name/$NODE/g" ${file} | kubectl create -f -`);
    expect(report).not.toContain(`kubectl create -f ${file}`);
    expect(report).toContain('kubectl create -f dist/instant-cluster/samples/mpijob.default.nccl-all-reduce.yaml');
    const named = clusterReport(renderOf((d) => { d.samples.nodeNames = ['gpu-worker-1']; }));
    expect(named).toContain('kubectl create -f dist/instant-cluster/samples/mpijob.default.nccl-node-check-gpu-worker-1.yaml');
    expect(named).not.toContain('sed "s/');
  });

  it('says that a one-worker NCCL run never touches InfiniBand', () => {
    const one = clusterReport(renderOf((d) => { d.nodes.gpuWorkers.count = 1; d.tenants = []; }));
    const section = one.slice(one.indexOf('### `nccl-all-reduce`'));
    expect(section).toMatch(/^NCCL test \(MPIJob\): 1 worker\(s\) x 8 slots = 8 ranks, 8 GPUs.* One worker: .*never over InfiniBand/m);
    expect(report.slice(report.indexOf('### `nccl-all-reduce`')).split('\n')[2]).not.toContain('One worker');
  });

  it('says what happens to a pod or job without a queue label in each namespace with a LocalQueue', () => {
    const section = (text: string) => text.slice(text.indexOf('### Pods and jobs without a queue label'), text.indexOf('## Tenants'));
    const row = (text: string, ns: string) => section(text).split('\n').find((l) => l.startsWith(`| \`${ns}\` |`)) ?? '';
    // Kueue's LocalQueue defaulting queues everything in "default", whose pre-wired LocalQueue is named "default" ...
    expect(row(report, 'default')).toMatch(/^\| `default` \| `default` -> `default` \| \*\*queued\*\* to `default`, CPU-only debug pods .* held \(a pod gated, a job suspended\) until ClusterQueue `default` admits it, its requests charged to that quota, .*`nvidia-h100-80gb-hbm3` \(`nvidia.com\/gpu.present=true`\)/);
    // ... and nothing in a tenant namespace, whose LocalQueue is named after the tenant: GPU and RDMA pods are refused there, by the
    // guardrails only (the SkyPilot identity policies guard the same namespaces but refuse only pods of those identities).
    for (const ns of ['research', 'inference']) {
      expect(row(report, ns)).toMatch(new RegExp(`^\\| \`${ns}\` \\| \`${ns}\` -> \`${ns}\` \\| \\*\\*not queued\\*\\*: a CPU-only pod runs at once, outside the quota, `
        + 'when it names `priorityClassName: unqueued` \\(the lowest priority, never preempting; ResourceQuota `unqueued` holds such pods to 4 CPU, 16Gi memory, 10 pods\\), '
        + 'and is refused by `tenant-pod-guardrails` without it; one requesting `nvidia.com/gpu` or `rdma/rdma_shared_device_a` is refused by `tenant-pod-guardrails` \\|$'));
    }
    // A tenant that opts in to defaulting (its LocalQueue named "default") has every pod queued, CPU-only ones too.
    const optIn = clusterReport(renderOf((d) => { d.tenants[0].queue = 'default'; }));
    expect(row(optIn, 'research')).toMatch(/^\| `research` \| `default` -> `research` \| \*\*queued\*\* to `default`.* ClusterQueue `research` admits it/);
    // Without guardrails (Kubernetes 1.29) nothing refuses a GPU pod outside the quota, and the report says so.
    const old = clusterReport(renderOf((d) => { d.kubernetesVersion = '1.29'; }));
    expect(row(old, 'research')).toContain('**not queued**: it runs at once, outside the quota, GPUs included');
  });

  it('has a tenant table saying what each tenant gets, may and may not do, read from the rendered Role and policies', () => {
    const section = report.slice(report.indexOf('## Tenants'), report.indexOf('## Argo CD sync waves'));
    expect(section).toContain('| research | `research` | `tenant-research` | `research` -> `research` | 8 | `high`, `low`, `normal` | 4 CPU, 16Gi memory, 10 pods | 250m CPU, 256Mi memory |');
    expect(section).toContain('- create, get: `pods/portforward`');
    for (const refused of [/^- tenant pods may not tolerate the taints the platform keeps/m, /^- tenant pods may not set spec.nodeName/m, /^- a pod outside Kueue .* must set priorityClassName: unqueued/m,
      /^- envFrom could set NVIDIA_VISIBLE_DEVICES/m, /^- tenant Services must be ClusterIP/m]) expect(section).toMatch(refused);
    const lines = section.split('\n').filter((l) => l.startsWith('- '));
    expect(new Set(lines).size).toBe(lines.length);
    // the priorities and allowances follow the description
    const restricted = clusterReport(renderOf((d) => { d.tenants[1].priorities = ['low']; d.tenants[1].unqueued = { cpu: '1', memory: '2Gi', pods: 3 }; }));
    expect(restricted).toContain('| inference | `inference` | `tenant-inference` | `inference` -> `inference` | 4 | `low` | 1 CPU, 2Gi memory, 3 pods |');
    // without guardrails (Kubernetes 1.29) the report says nothing refuses
    expect(clusterReport(renderOf((d) => { d.kubernetesVersion = '1.29'; }))).toContain('**No admission policy guards the tenant namespaces**');
  });

  it('bootstraps from the rendered gitops objects: kustomize, the root, the by-hand Application, and fleet registration', () => {
    const gitops = folderObjects(cluster, 'gitops');
    const section = report.slice(report.indexOf('## Bootstrap'), report.indexOf('## When a sync wave holds'));
    // from a bare cluster in two commands: Argo CD itself (server-side), then the gitops folder
    const commands = section.slice(section.indexOf('```sh'), section.indexOf('```', section.indexOf('```sh') + 5)).split('\n').filter((l) => l.startsWith('kubectl apply'));
    expect(commands).toEqual([
      'kubectl apply --server-side --force-conflicts --field-manager=argocd-controller -k dist/instant-cluster/argocd   # 1. Argo CD itself',
      'kubectl apply -f dist/instant-cluster/gitops/appproject.argocd.instant-cluster.yaml -f dist/instant-cluster/gitops/application.argocd.instant-cluster.yaml'
        + '   # 2. the AppProject and the root Application',
    ]);
    // the bootstrap applies the root, which its folder does not list (it would wait for itself); kustomize refuses the folder alone
    expect(section).toContain('not the root itself, which would wait in its own sync for its own health');
    expect(section).toContain('(`kubectl apply -k dist/instant-cluster/gitops` is refused by kustomize for this reason');
    expect(section).toContain('itself included (Application `instant-cluster-argocd`)');
    expect(section).not.toMatch(/kubectl apply -n \S+ -f dist\/instant-cluster\/gitops\/?\s/);
    const project = gitops.find((m) => m.kind === 'AppProject')!;
    expect(section).toContain(`AppProject \`${project.metadata.name}\``);
    const apps = gitops.filter((m) => m.kind === 'Application' && m.metadata.name !== 'instant-cluster');
    const byHand = apps.filter((m) => m.metadata.annotations?.['gpu-cluster.dev/apply-by-hand'] === 'true');
    expect(byHand.length).toBeGreaterThan(0);
    expect(section).toContain(`the AppProject and the ${apps.length - byHand.length} Applications`);
    for (const a of byHand) expect(section).toContain(`kubectl apply -f dist/instant-cluster/gitops/application.${a.metadata.namespace}.${a.metadata.name}.yaml`);
    expect(section).toContain('argocd cluster add <kube-context-of-instant-cluster> --name instant-cluster');
    expect(section).toContain('kubectl apply -k dist/fleet');
    // the install's source is named: the remote base by default, the folder's own copy with gitops.argocdInstall vendored
    expect(section).toContain('and the install\'s remote base, `https://github.com/argoproj/argo-cd//manifests/cluster-install?ref=v3.5.1`.');
    const vendored = clusterReport(renderOf((d) => { d.gitops.argocdInstall = 'vendored'; }));
    expect(vendored.slice(vendored.indexOf('## Bootstrap'), vendored.indexOf('## Run the samples'))).toContain(': the install comes from the folder\'s own copy of it, nothing else is read.');
  });

  it('says what holds the sync waves and what does not, and prints each escape hatch with the cluster\'s names', () => {
    const holds = (r: string) => r.slice(r.indexOf('## When a sync wave holds'), r.indexOf('## Run the samples'));
    const section = holds(report);
    const gitops = folderObjects(cluster, 'gitops');
    const commands = section.slice(section.indexOf('```sh'), section.indexOf('```', section.indexOf('```sh') + 5)).split('\n').filter((l) => l.startsWith('argocd '));
    // every Application the root syncs is named in each hatch, by wave; the root and those applied by hand are not
    const synced = gitops.filter((m) => m.kind === 'Application' && m.metadata.name !== 'instant-cluster' && m.metadata.annotations?.['gpu-cluster.dev/apply-by-hand'] !== 'true');
    const wave = (a: Manifest) => Number(a.metadata.annotations!['argocd.argoproj.io/sync-wave']);
    const byWave = [...synced].sort((a, b) => wave(a) - wave(b) || (a.metadata.name < b.metadata.name ? -1 : 1));
    const first = Math.min(...synced.map(wave));
    expect(byWave.length).toBeGreaterThan(2);
    expect(commands.map((l) => l.replace(/\s+#.*/, ''))).toEqual([
      'argocd app get instant-cluster',
      'argocd app terminate-op instant-cluster',
      'argocd app sync instant-cluster --async --retry-limit -1 --retry-refresh',
      ...byWave.map((a) => `argocd app terminate-op ${a.metadata.name}`),
      ...byWave.map((a) => `argocd app sync ${a.metadata.name}`),
      'argocd app confirm-deletion instant-cluster-tenants',
      // ahead of a failing wave: none of the first wave has a wave before it
      ...byWave.filter((a) => wave(a) > first).map((a) => `argocd app sync instant-cluster --resource argoproj.io:Application:${a.metadata.name}`),
    ]);
    for (const a of byWave.filter((x) => wave(x) > first)) expect(section).toContain(`argocd app sync instant-cluster --resource argoproj.io:Application:${a.metadata.name}   # wave ${wave(a)}\n`);
    expect(section).not.toContain('<application>');
    // the tenants' Namespaces are Prune=confirm: the report names the Application whose sync waits, and both ways to confirm
    expect(section).toContain('leaves the sync of `instant-cluster-tenants` at "waiting for pruning confirmation" until someone confirms, with `argocd app confirm-deletion` above or with:');
    expect(section).toContain('\nkubectl annotate application -n argocd instant-cluster-tenants argocd.argoproj.io/deletion-approved=$(date -u +%Y-%m-%dT%H:%M:%SZ)\n');
    for (const a of synced) expect(section).toMatch(new RegExp(`\\| ${wave(a)} \\|[^\n]*\`${a.metadata.name}\``));
    expect(section).not.toContain('`instant-cluster-samples`');
    expect(section).toContain('**Not Healthy after 10m (`gitops.waveWait`).**');
    expect(section).toContain('retries its own failed sync 5 times (for 2m15s) first');
    expect(section).not.toContain('--prune');
    // with automated.prune off, what a commit removes stays, and the report says how to delete it
    const noPrune = holds(clusterReport(renderOf((d) => { d.gitops.automated = { prune: false, selfHeal: true }; d.gitops.waveWait = '90s'; })));
    for (const a of synced) expect(noPrune).toContain(`\nargocd app sync ${a.metadata.name} --prune\n`);
    expect(noPrune).toContain('**Objects a commit removes stay**');
    expect(noPrune).toContain('**Not Healthy after 1m30s (`gitops.waveWait`).**');
  });

  it('external Argo CD: no first command, the health checks for its argocd-cm instead; a managed stack: the Grafana Secret to create', () => {
    const external = clusterReport(renderOf((d) => { d.gitops.argocd = 'external'; }));
    const section = external.slice(external.indexOf('## Bootstrap'), external.indexOf('## Run the samples'));
    expect(section).not.toContain('-k dist/instant-cluster/argocd');
    expect(section).toContain('kubectl apply --server-side -f dist/fleet/configmap.argocd.argocd-cm.yaml');
    expect(section).toContain('kubectl apply -f dist/instant-cluster/gitops/appproject.argocd.instant-cluster.yaml -f dist/instant-cluster/gitops/application.argocd.instant-cluster.yaml\n');
    // a cluster the hub's Argo CD runs: the same commands, against the hub, after registering the cluster under its server
    const hubbed = clusterReport(renderOf((d) => { d.gitops.destinationServer = 'https://10.0.0.1:6443'; }));
    const hub = hubbed.slice(hubbed.indexOf('## Bootstrap'), hubbed.indexOf('## Run the samples'));
    expect(hub).toContain('This cluster runs no Argo CD: a hub\'s runs its Applications, which live in the hub\'s namespace `argocd` and deploy to `https://10.0.0.1:6443`');
    expect(hub).toContain('application.argocd.instant-cluster.yaml   # on the hub\n');
    expect(hub).toContain('applies `dist/instant-cluster/gitops` to the hub itself');
    const stack = clusterReport(renderOf((d) => { d.installs = { monitoring: 'managed' }; }));
    expect(stack).toContain('kubectl create secret generic grafana-admin -n monitoring --from-literal=admin-user=admin --from-literal=admin-password="$(openssl rand -base64 30)"');
    expect(report).not.toContain('grafana-admin');
  });

  it('says how to run every sample of the samples folder, with the shape read from the object', () => {
    const samplesOf = (c: typeof cluster) => folderObjects(c, 'samples').filter((m) => ['MPIJob', 'PyTorchJob', 'Job'].includes(m.kind));
    const samples = samplesOf(cluster);
    // the Instant Cluster has no Training Operator: no PyTorchJob sample, and the report has no section for one
    expect(samples.map((m) => m.kind).sort()).toEqual(['Job', 'MPIJob', 'MPIJob']);
    for (const m of samples) expect(report, m.metadata.name).toContain(`### \`${m.metadata.name}\``);
    expect(report).not.toMatch(/^### .*\n\n.*\(PyTorchJob\)/m);
    // with one (pre-installed by declaration), the DDP sample and how to run it
    const withTraining = renderOf((d) => { d.installs = { ...d.installs, trainingOperator: 'preinstalled' }; });
    const ddp = samplesOf(withTraining).find((m) => m.kind === 'PyTorchJob')! as any;
    const ddpReport = clusterReport(withTraining);
    expect(ddpReport).toContain(`### \`${ddp.metadata.name}\``);
    const pods = Object.values(ddp.spec.pytorchReplicaSpecs as Record<string, { replicas: number }>).reduce((n, r) => n + r.replicas, 0);
    const world = pods * Number(ddp.spec.nprocPerNode);
    expect(ddpReport).toContain(`= world size ${world}, `);
    expect(ddpReport).toContain(`kubectl logs -n default -f -l training.kubeflow.org/job-name=${ddp.metadata.name},training.kubeflow.org/job-role=master`);
    expect(report).toContain(`\`dcgmi diag -r ${cluster.model.description.samples.dcgmDiag.level}\``);
    const dcgm = samples.find((m) => m.kind === 'Job')!;
    expect(report).toContain(`sed "s/replace-with-node-name/$NODE/g" dist/instant-cluster/samples/job.default.${dcgm.metadata.name}.yaml | kubectl create -f -`);
    expect(report).toContain('kubectl logs -n default -f job/dcgm-diag-$NODE');
  });

  it('lists every alert and dashboard the monitoring folder installs, as rendered', () => {
    const monitoring = folderObjects(cluster, 'monitoring');
    const alerts = monitoring.filter((m) => m.kind === 'VMRule')
      .flatMap((r: any) => r.spec.groups.flatMap((g: any) => g.rules.filter((a: any) => a.alert).map((a: any) => ({ group: g.name, ...a }))));
    expect(alerts.length).toBeGreaterThan(5);
    expect(report).toContain(`${alerts.length} alerts (VMRule`);
    for (const a of alerts) expect(report).toMatch(new RegExp(`^\\| \`${a.alert}\` \\| ${a.group} \\| ${a.labels.severity} \\| ${a.for ?? 'at once'} \\|`, 'm'));
    const dashboards = monitoring.filter((m) => m.kind === 'ConfigMap' && m.metadata.labels?.grafana_dashboard === '1')
      .flatMap((cm: any) => Object.values(cm.data as Record<string, string>).map((t) => JSON.parse(t)));
    expect(dashboards.length).toBeGreaterThan(0);
    for (const d of dashboards) expect(report).toContain(`| \`${d.uid}\` | ${d.description} | ${d.panels.length}: `);
  });

  it('matches the snapshot', () => {
    expect(report).toMatchSnapshot();
  });
});
