import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { EXIT, main } from '../../src/cli';
import { DeletionRefused, readTreeObjects } from '../../src/render/deletions';
import { synth } from '../../src/synth/pipeline';
import { referenceInput, readTreeFiles, ROOT } from '../helpers';

// Argo CD prunes what leaves dist/: a dropped tenant takes its Namespace, and everything in it, with it.
// synth refuses to remove rendered objects unless --allow-delete, lists them on stderr as diff does,
// and leaves the output byte-identical; the same with --config/--out and without arguments (the fleet).
// Each line says what argo-cd v3.5.1 does where that is not a plain prune (src/render/deletions.ts clusterFate).

/** The line of the dropped tenant's Namespace: Prune=confirm, so Argo CD's sync waits for a confirmation (gitops-engine sync_context.go runTasks). */
const INFERENCE_NAMESPACE = '- instant-cluster: Namespace inference (tenants/namespace.inference.yaml): Argo CD deletes it only once someone confirms '
  + '(Prune=confirm): its Application waits ("waiting for pruning confirmation") until: argocd app confirm-deletion instant-cluster-tenants';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

type Edit = (d: Record<string, any>) => void;
let work: string;
const file = (name: string, edit: Edit = () => {}) => {
  const d = referenceInput();
  edit(d);
  const p = path.join(work, name);
  writeFileSync(p, stringify(d));
  return p;
};
/** synth's warning after removing one rendered object the cluster keeps. */
const KEPT_WARNING = /^warning: 1 rendered object\(s\) removed from .* stay in the cluster \(Argo CD does not prune them, as their line says\): delete them by hand if they are no longer wanted$/;
const withoutInference: Edit = (d) => { d.tenants = d.tenants.filter((t: { name: string }) => t.name !== 'inference'); };

/**
 * An output `<work>/<name>` rendered from the reference description (with `base`), and the description that drops
 * something from it (`base`, then `drop`): each test synths or diffs the dropped one against that output.
 */
interface Dropped {
  readonly out: string;
  readonly reference: string;
  readonly dropped: string;
}
function renderedThenDropped(name: string, drop: Edit, base: Edit = () => {}): Dropped {
  const out = path.join(work, name);
  const reference = file(`${name}-reference.yaml`, base);
  const dropped = file(`${name}-dropped.yaml`, (d) => { base(d); drop(d); });
  expect(main(['synth', '--config', reference, '--out', out, '--quiet'])).toBe(EXIT.ok);
  return { out, reference, dropped };
}

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'synth-deletions-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('synth --config FILE --out DIR', () => {
  let out: string;
  let reference: string;
  let dropped: string;
  beforeAll(() => ({ out, reference, dropped } = renderedThenDropped('one', withoutInference)));

  it('refuses to remove a tenant\'s Namespace and objects: exit 1, each on stderr, the output byte-identical', () => {
    const before = readTreeFiles(out);
    const c = capture();
    expect(main(['synth', '--config', dropped, '--out', out], c.io)).toBe(EXIT.failed);
    expect(c.err).toContain(INFERENCE_NAMESPACE);
    expect(c.err).toContain('- instant-cluster: LocalQueue inference/inference (tenants/localqueue.inference.inference.yaml)');
    expect(c.err).toContain('- instant-cluster: ClusterQueue inference (kueue/clusterqueue.inference.yaml)');
    expect(c.err.at(-1)).toMatch(/^error: \d+ rendered object\(s\) would be deleted from .*one, and Argo CD would prune them from the cluster; nothing was written; re-run with --allow-delete if that is intended$/);
    expect(c.out).toEqual([]);
    expect(readTreeFiles(out)).toEqual(before);
    expect(readdirSync(out)).toEqual(['instant-cluster']);
  });

  it('lists what diff lists as removed, no more and no less', () => {
    const s = capture();
    expect(main(['synth', '--config', dropped, '--out', out], s.io)).toBe(EXIT.failed);
    const d = capture();
    expect(main(['diff', '--config', dropped, '--out', out], d.io)).toBe(EXIT.failed);
    expect(s.err.filter((l) => l.startsWith('- '))).toEqual(d.err.filter((l) => l.startsWith('- ')));
  });

  it('removes them with --allow-delete, saying what went', () => {
    const c = capture();
    expect(main(['synth', '--config', dropped, '--out', out, '--allow-delete'], c.io)).toBe(EXIT.ok);
    expect(existsSync(path.join(out, 'instant-cluster', 'tenants', 'namespace.inference.yaml'))).toBe(false);
    expect(c.err).toContain(INFERENCE_NAMESPACE);
    expect(c.err.at(-1)).toMatch(/^note: \d+ rendered object\(s\) removed from .*one \(--allow-delete\); Argo CD prunes them when it syncs, or as their line says$/);
    // Nothing more to remove: a second run needs no flag.
    const again = capture();
    expect(main(['synth', '--config', dropped, '--out', out, '--quiet'], again.io)).toBe(EXIT.ok);
    expect(again.err).toEqual([]);
  });

  it('adding objects needs no flag', () => {
    const c = capture();
    expect(main(['synth', '--config', reference, '--out', out, '--quiet'], c.io)).toBe(EXIT.ok);
    expect(c.err).toEqual([]);
  });

  it('through npm run: exit 1, the same lines on stderr, the output unchanged', () => {
    const before = readTreeFiles(out);
    const npm = spawnSync('npm', ['run', '-s', 'synth', '--', '--config', dropped, '--out', out], {
      cwd: ROOT, env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false' }, encoding: 'utf8',
    });
    expect(npm.status, npm.stderr).toBe(1);
    expect(npm.stderr.split('\n')).toContain(INFERENCE_NAMESPACE);
    expect(npm.stderr).toMatch(/would be deleted from .*; nothing was written; re-run with --allow-delete/);
    expect(readTreeFiles(out)).toEqual(before);
  });
});

describe('synth of every description (the fleet, as `npm run synth` without arguments)', () => {
  let clusters: string;
  let out: string;
  const run = (allowDelete = false) => synth({ clustersDir: clusters, out, schemas: false, allowDelete });
  const refused = (): DeletionRefused => {
    try {
      run();
    } catch (e) {
      if (e instanceof DeletionRefused) return e;
      throw e;
    }
    throw new Error('synth removed objects without --allow-delete');
  };

  beforeAll(() => {
    clusters = path.join(work, 'clusters');
    out = path.join(work, 'fleet-out');
    mkdirSync(clusters);
    writeFileSync(path.join(clusters, 'instant-cluster.yaml'), stringify(referenceInput()));
    writeFileSync(path.join(clusters, 'second-cluster.yaml'), stringify({ ...referenceInput(), name: 'second-cluster', gitops: { ...referenceInput().gitops, path: 'dist/second-cluster' } }));
    run();
    expect(readdirSync(out).sort()).toEqual(['fleet', 'instant-cluster', 'second-cluster']);
  });

  it('a cluster dropped from the descriptions: every object of its folder, and nothing written', () => {
    const before = readTreeFiles(out);
    rmSync(path.join(clusters, 'second-cluster.yaml'));
    const e = refused();
    const objects = readTreeObjects(out, ['second-cluster']);
    expect(objects.length).toBeGreaterThan(50);
    expect(e.deletions).toHaveLength(objects.length);
    expect(new Set(e.deletions.map((d) => d.cluster))).toEqual(new Set(['second-cluster']));
    expect(e.deletions.map((d) => d.object)).toContain('Namespace research');
    // the fleet folder's ApplicationSet generated its root on a hub: the line says what the hub's cascade does once the
    // fleet folder is applied there again, and that until then nothing goes (render/deletions.ts clusterFate)
    expect(e.deletions.find((d) => d.object === 'LocalQueue inference/inference')?.note).toMatch(new RegExp(
      '^once dist/fleet/ is applied on the hub again \\(kubectl apply -k dist/fleet\\), its ApplicationSet deletes the hub\'s Application second-cluster '
      + '\\(resources finalizer\\), and this is then deleted with its Application second-cluster-tenants, which leaves too: its resources finalizer deletes '
      + 'what it applied, provided the cluster is still registered on the hub \\(.*\\); until then nothing is deleted: its cluster\'s folder leaves dist/, '
      + 'so the Application that syncs its root \\(second-cluster: '
      + 'the root applied by hand, or the hub\'s\\) reads a path that no longer exists',
    ));
    expect(readTreeFiles(out)).toEqual(before);
    writeFileSync(path.join(clusters, 'second-cluster.yaml'), stringify({ ...referenceInput(), name: 'second-cluster', gitops: { ...referenceInput().gitops, path: 'dist/second-cluster' } }));
  });

  it('a folder a description no longer renders: its objects and its Application', () => {
    const before = readTreeFiles(out);
    writeFileSync(path.join(clusters, 'instant-cluster.yaml'), stringify({ ...referenceInput(), monitoring: { dashboard: { enabled: false } } }));
    const e = refused();
    const where = new Set(e.deletions.map((d) => d.file.split('/').slice(0, 2).join('/')));
    expect(where).toEqual(new Set(['instant-cluster/dashboard', 'instant-cluster/gitops']));
    expect(e.deletions.filter((d) => d.file.startsWith('instant-cluster/gitops/')).map((d) => d.object)).toEqual(['Application argocd/instant-cluster-dashboard']);
    // the Application leaves with its folder and carries the resources finalizer: its prune deletes what it applied
    for (const d of e.deletions.filter((x) => x.file.startsWith('instant-cluster/dashboard/') && x.stays === undefined)) {
      expect(d.note, d.object).toMatch(/^deleted with its Application instant-cluster-dashboard, which leaves too/);
    }
    expect(readTreeFiles(out)).toEqual(before);
    writeFileSync(path.join(clusters, 'instant-cluster.yaml'), stringify(referenceInput()));
  });

  it('a file of the output that is no YAML counts unless the render rewrites it', () => {
    const rewritten = path.join(out, 'instant-cluster', 'tenants', 'namespace.research.yaml');
    writeFileSync(rewritten, 'kind: [unclosed\n');
    expect(run().deleted).toEqual([]);
    const stray = path.join(out, 'instant-cluster', 'tenants', 'notes.yaml');
    writeFileSync(stray, 'kind: [unclosed\n');
    expect(refused().deletions).toEqual([
      { cluster: 'instant-cluster', object: expect.stringMatching(/^the objects of an unreadable file \(.*notes\.yaml: invalid YAML/), file: 'instant-cluster/tenants/notes.yaml', notAnObject: true },
    ]);
    rmSync(stray);
  });

  it('with allowDelete, the dropped cluster goes and the result lists its objects', () => {
    rmSync(path.join(clusters, 'second-cluster.yaml'));
    const count = readTreeObjects(out, ['second-cluster']).length;
    const r = run(true);
    expect(r.deleted).toHaveLength(count);
    expect(readdirSync(out).sort()).toEqual(['fleet', 'instant-cluster']);
  });

  it('a cluster dropped where no fleet folder generated its root: its root, applied by hand, keeps everything; nothing is asked', () => {
    const second = { ...referenceInput(), name: 'second-cluster', gitops: { ...referenceInput().gitops, path: 'dist/second-cluster' } };
    writeFileSync(path.join(clusters, 'second-cluster.yaml'), stringify(second));
    run();
    rmSync(path.join(out, 'fleet'), { recursive: true });
    rmSync(path.join(clusters, 'second-cluster.yaml'));
    const r = run();
    expect(r.deleted.length).toBeGreaterThan(50);
    expect(r.deleted.filter((d) => d.stays === undefined)).toEqual([]);
    expect(r.deleted.find((d) => d.object === 'Namespace research')?.stays).toMatch(/^stays in the cluster: its cluster's folder leaves dist\/, so the Application that syncs its root \(second-cluster: the root applied by hand, or the hub's\) reads a path that no longer exists: it syncs nothing, showing the status of its last comparison for the controller's repo-error grace period \(180 s by default\), then, or at once on a refresh \(argocd app get second-cluster --refresh\), Argo CD shows it with a ComparisonError/);
    expect(readdirSync(out).sort()).toEqual(['fleet', 'instant-cluster']);
  });
});

// Argo CD never prunes a CRD: its repo server sets no tracking annotation on one (argo-cd v3.5.1,
// reposerver/repository/repository.go, `!kube.IsCRD(target)`), so no Application owns it; the twin showed it
// (test/cluster/gitops-waves.test.ts: a CRD and its Widget removed, the Widget pruned, the CRD left).
describe('a CRD that leaves the output stays in the cluster: listed as such, no --allow-delete asked', () => {
  let out: string;
  let reference: string;
  let dropped: string;
  const CRD_FILE = path.join('instant-cluster', 'storage', 'customresourcedefinition.widgets.example.com.yaml');
  const CRD_LINE = '- instant-cluster: CustomResourceDefinition widgets.example.com (storage/customresourcedefinition.widgets.example.com.yaml): '
    + 'stays in the cluster: Argo CD never prunes a CRD (no Application owns one), only the Widget objects it applied; '
    + 'an admin deletes it if wanted: kubectl delete crd widgets.example.com (deletes every Widget left)';
  /** The output as a render that had a CRD left it (the new render has none). */
  const withCrd = () => copyFileSync(path.join(ROOT, 'test', 'fixtures', 'upgrade', 'crd-pair', 'old', 'widgets.example.com.yaml'), path.join(out, CRD_FILE));
  beforeAll(() => ({ out, reference, dropped } = renderedThenDropped('crd', withoutInference)));

  it('diff: listed on stdout and stderr with what the cluster does and the kubectl command; exit 0; json counts it removed, not pruned', () => {
    withCrd();
    const c = capture();
    expect(main(['diff', '--config', reference, '--out', out], c.io)).toBe(EXIT.ok);
    expect(c.out).toContain('  - CustomResourceDefinition widgets.example.com (storage/customresourcedefinition.widgets.example.com.yaml)');
    expect(c.out.at(-1)).toBe('0 added, 1 removed (1 of them stay in the cluster), 0 changed, 0 other file(s)');
    expect(c.err).toEqual([CRD_LINE]);
    const quiet = capture();
    expect(main(['diff', '--config', reference, '--out', out, '--quiet'], quiet.io)).toBe(EXIT.ok);
    expect([...quiet.out, ...quiet.err]).toEqual([]);
    const json = capture();
    expect(main(['diff', '--config', reference, '--out', out, '--format', 'json'], json.io)).toBe(EXIT.ok);
    const d = JSON.parse(json.out.join('\n'));
    expect([d.removed, d.pruned]).toEqual([1, 0]);
    expect(d.objects).toEqual([expect.objectContaining({ change: 'removed', object: 'CustomResourceDefinition widgets.example.com', stays: expect.stringContaining('kubectl delete crd widgets.example.com') })]);
  });

  it('diff and synth beside deletions Argo CD prunes: those alone are counted and refused; the CRD is listed as staying', () => {
    withCrd();
    const d = capture();
    expect(main(['diff', '--config', dropped, '--out', out], d.io)).toBe(EXIT.failed);
    const pruned = d.err.filter((l) => l.startsWith('- ') && l !== CRD_LINE);
    expect(pruned.length).toBeGreaterThanOrEqual(3);
    expect(d.err).toContain(CRD_LINE);
    expect(d.err.at(-1)).toBe(`error: ${pruned.length} object(s) would be deleted; re-run with --allow-delete if that is intended`);
    // --quiet: only what it refuses
    const quiet = capture();
    expect(main(['diff', '--config', dropped, '--out', out, '--quiet'], quiet.io)).toBe(EXIT.failed);
    expect(quiet.err).toEqual([...pruned, d.err.at(-1)]);
    const s = capture();
    expect(main(['synth', '--config', dropped, '--out', out], s.io)).toBe(EXIT.failed);
    expect(s.err).toContain(CRD_LINE);
    expect(s.err.at(-1)).toMatch(new RegExp(`^error: ${pruned.length} rendered object\\(s\\) would be deleted from .*crd, and Argo CD would prune them from the cluster; nothing was written`));
    expect(existsSync(path.join(out, CRD_FILE))).toBe(true);
  });

  it('synth: removes the CRD without --allow-delete, warning that it stays in the cluster; --quiet prints nothing', () => {
    withCrd();
    const c = capture();
    expect(main(['synth', '--config', reference, '--out', out], c.io)).toBe(EXIT.ok);
    expect(existsSync(path.join(out, CRD_FILE))).toBe(false);
    expect(c.err).toEqual([CRD_LINE, expect.stringMatching(KEPT_WARNING)]);
    withCrd();
    const quiet = capture();
    expect(main(['synth', '--config', reference, '--out', out, '--quiet'], quiet.io)).toBe(EXIT.ok);
    expect(quiet.err).toEqual([]);
    expect(existsSync(path.join(out, CRD_FILE))).toBe(false);
  });

  it('with --allow-delete: the note counts what Argo CD prunes, the warning the CRD', () => {
    withCrd();
    const c = capture();
    expect(main(['synth', '--config', dropped, '--out', out, '--allow-delete'], c.io)).toBe(EXIT.ok);
    const pruned = c.err.filter((l) => l.startsWith('- ') && l !== CRD_LINE).length;
    expect(c.err).toContain(CRD_LINE);
    expect(c.err.slice(-2)).toEqual([
      expect.stringMatching(new RegExp(`^note: ${pruned} rendered object\\(s\\) removed from .*crd \\(--allow-delete\\); Argo CD prunes them`)),
      expect.stringMatching(KEPT_WARNING),
    ]);
  });
});

// An adopted object (what the pre-installed add-ons created, ADOPTED_SYNC_OPTIONS) says Prune=false,Delete=false: Argo CD
// never prunes it (argo-cd v3.5.1 gitops-engine/pkg/sync/sync_context.go:1454-1458 pruneObject, "ignored (no prune)").
describe('an adopted object (Prune=false) that leaves the output stays in the cluster: listed as such, no --allow-delete asked', () => {
  let t: Dropped;
  const ADOPTED_LINE = '- instant-cluster: Service kubernetes-dashboard/kubernetes-dashboard-kong-proxy '
    + '(dashboard/service.kubernetes-dashboard.kubernetes-dashboard-kong-proxy.yaml): stays in the cluster: Argo CD never prunes an object '
    + 'whose sync options say Prune=false, nor deletes it with its Application (Delete=false); its Application shows it OutOfSync '
    + '(requires pruning) while it stays; an admin deletes it if wanted: kubectl delete -n kubernetes-dashboard service kubernetes-dashboard-kong-proxy';
  const dashboard = (service: string): Edit => (d) => { d.monitoring = { ...d.monitoring, dashboard: { ...d.monitoring?.dashboard, service } }; };
  beforeAll(() => { t = renderedThenDropped('adopted', dashboard('preinstalled'), dashboard('adopt')); });

  it('diff: exit 0, the object listed as staying with the kubectl command; json counts it removed, not pruned', () => {
    const c = capture();
    expect(main(['diff', '--config', t.dropped, '--out', t.out], c.io)).toBe(EXIT.ok);
    expect(c.err).toEqual([ADOPTED_LINE]);
    expect(c.out.at(-1)).toMatch(/^0 added, 1 removed \(1 of them stay in the cluster\), \d+ changed, \d+ other file\(s\)$/);
    const json = capture();
    expect(main(['diff', '--config', t.dropped, '--out', t.out, '--format', 'json'], json.io)).toBe(EXIT.ok);
    const d = JSON.parse(json.out.join('\n'));
    expect([d.removed, d.pruned]).toEqual([1, 0]);
  });

  it('synth: removes it without --allow-delete, listing it and warning that it stays in the cluster', () => {
    const c = capture();
    expect(main(['synth', '--config', t.dropped, '--out', t.out], c.io)).toBe(EXIT.ok);
    expect(c.err).toEqual([ADOPTED_LINE, expect.stringMatching(KEPT_WARNING)]);
    expect(existsSync(path.join(t.out, 'instant-cluster', 'dashboard', 'service.kubernetes-dashboard.kubernetes-dashboard-kong-proxy.yaml'))).toBe(false);
    expect(main(['synth', '--config', t.reference, '--out', t.out, '--quiet'])).toBe(EXIT.ok);
  });
});

// A managed install's Application carries no resources finalizer (src/components/gitops/plan.ts): the root prunes the
// Application, and the API server removes it at once; the controller deletes an Application's resources only for one
// being deleted with that finalizer (argo-cd v3.5.1 controller/appcontroller.go:1137, :1344 app.CascadedDeletion()).
describe('an install dropped from a description: Argo CD deletes its Application, not what it installed', () => {
  let t: Dropped;
  const APPLICATION_LINE = '- instant-cluster: Application argocd/instant-cluster-mpi-operator-install '
    + '(gitops/application.argocd.instant-cluster-mpi-operator-install.yaml): Argo CD deletes this Application only, not what it applied '
    + '(it carries no resources finalizer): that stays in the cluster, synced by nothing; to have it deleted too, give the Application the '
    + 'finalizer before the change reaches Argo CD: kubectl patch application -n argocd instant-cluster-mpi-operator-install --type merge '
    + '-p \'{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}\'';
  const mpiOperator = (mode: string): Edit => (d) => { d.installs = { ...d.installs, mpiOperator: mode }; };
  beforeAll(() => { t = renderedThenDropped('install', mpiOperator('preinstalled'), mpiOperator('managed')); });

  it('synth and diff: the Application is a deletion Argo CD carries out (exit 1 without --allow-delete), its line says what stays', () => {
    const d = capture();
    expect(main(['diff', '--config', t.dropped, '--out', t.out], d.io)).toBe(EXIT.failed);
    expect(d.err).toContain(APPLICATION_LINE);
    const json = capture();
    expect(main(['diff', '--config', t.dropped, '--out', t.out, '--format', 'json'], json.io)).toBe(EXIT.failed);
    expect(JSON.parse(json.out.join('\n')).objects).toContainEqual(expect.objectContaining({
      change: 'removed', object: 'Application argocd/instant-cluster-mpi-operator-install', note: expect.stringContaining('Argo CD deletes this Application only'),
    }));
    const s = capture();
    expect(main(['synth', '--config', t.dropped, '--out', t.out], s.io)).toBe(EXIT.failed);
    expect(s.err).toContain(APPLICATION_LINE);
    expect(s.err.at(-1)).toMatch(/^error: \d+ rendered object\(s\) would be deleted from .*install, and Argo CD would prune them from the cluster; nothing was written/);
  });

  it('with --allow-delete: removed, with the same line', () => {
    const c = capture();
    expect(main(['synth', '--config', t.dropped, '--out', t.out, '--allow-delete'], c.io)).toBe(EXIT.ok);
    expect(c.err).toContain(APPLICATION_LINE);
    expect(existsSync(path.join(t.out, 'instant-cluster', 'gitops', 'application.argocd.instant-cluster-mpi-operator-install.yaml'))).toBe(false);
  });
});
