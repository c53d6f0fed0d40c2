import { describe, expect, it } from 'vitest';
import { LiveSession } from '../../src/preflight/live';
import { Manifest } from '../../src/render/manifest';
import { RenderedSource } from '../../src/upstream/render';
import { LAST_APPLIED } from '../../src/verify/apply-request';
import { VerifyFinding, verifyCluster } from '../../src/verify/dry-run';

/*
 * What verify sends for each object, against a server of the test's own that records the requests (what a real API
 * server answers to them: test/cluster/live-commands.test.ts): Argo CD's client-side apply unless ServerSideApply=true,
 * never a fieldValidation from Argo CD (gitops-engine v3.5.1 sets none: the server's default, Warn), the root
 * Application applied by hand as kubectl sends it, the API server's Warning headers as warnings, and a CRD another
 * Application of the same wave brings as the race it is.
 */

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly contentType?: string;
  readonly body?: any;
}

/** Kinds served: apiVersion -> kind -> [plural, namespaced]. */
const SERVED: Record<string, Record<string, [string, boolean]>> = {
  'v1': { ConfigMap: ['configmaps', true], Namespace: ['namespaces', false] },
  'argoproj.io/v1alpha1': { Application: ['applications', true], AppProject: ['appprojects', true] },
  'apiextensions.k8s.io/v1': { CustomResourceDefinition: ['customresourcedefinitions', false] },
  'rbac.authorization.k8s.io/v1': { RoleBinding: ['rolebindings', true] },
};

/** What the API server answers to a patch of a RoleBinding whose roleRef changes (k8s.io/kubernetes pkg/apis/rbac/validation). */
const roleRefRefusal = (name: string) => ({
  kind: 'Status',
  code: 422,
  reason: 'Invalid',
  message: `RoleBinding.rbac.authorization.k8s.io "${name}" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef`,
});

/** A server of the test's own: `live` by path, every request recorded; a dry-run write answers its body, with `warn` as Warning headers. */
function fakeSession(live: Record<string, object>, sent: Sent[], warn: (body: any) => string[] = () => []): LiveSession {
  return {
    server: 'https://fake:6443',
    user: 'admin',
    where: '--kubeconfig fake',
    get: async (p) => {
      const v = /^\/apis?\/(.+)$/.exec(p)?.[1];
      const kinds = v === undefined ? undefined : SERVED[v];
      return kinds && { resources: Object.entries(kinds).map(([kind, [name, namespaced]]) => ({ kind, name, namespaced })) };
    },
    request: async (method, p, body) => {
      sent.push({ method, path: p, contentType: body?.contentType, body: body && JSON.parse(body.text) });
      if (method === 'GET') return live[p] ? { status: 200, body: live[p] } : { status: 404, body: { kind: 'Status', code: 404, details: {} } };
      // the namespace nothing live has (what the API server answers to a write into it)
      if (p.startsWith('/api/v1/namespaces/shared/')) return { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound', message: 'namespaces "shared" not found', details: { kind: 'namespaces', name: 'shared' } } };
      const object = JSON.parse(body!.text);
      if (object.kind === 'RoleBinding' && method === 'PATCH') return { status: 422, body: roleRefRefusal(object.metadata.name) };
      return { status: 200, body: object, warnings: warn(object) };
    },
    list: async () => [],
    close: () => {},
  };
}

const app = (name: string, path: string, opts: { wave?: number; syncOptions?: string[]; retry?: boolean } = {}): Manifest => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name, namespace: 'argocd', ...(opts.wave !== undefined ? { annotations: { 'argocd.argoproj.io/sync-wave': String(opts.wave) } } : {}) },
  spec: {
    project: 'lab',
    source: { repoURL: 'https://git.example.com/lab.git', path },
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
    syncPolicy: { automated: { prune: true }, syncOptions: opts.syncOptions ?? [], ...(opts.retry ? { retry: { limit: -1 } } : {}) },
  },
});
const source = (application: Manifest, objects: Manifest[]): RenderedSource => ({
  application,
  index: 0,
  type: 'folder',
  what: `folder ${(application.spec as { source: { path: string } }).source.path}`,
  namespace: application.metadata.name,
  objects,
  unrenderedCrds: [],
});
const configMap = (name: string, data: Record<string, string> = { a: '1' }): Manifest => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data } as Manifest);
const widgetCrd: Manifest = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: { group: 'example.com', scope: 'Cluster', names: { kind: 'Widget', plural: 'widgets' }, versions: [{ name: 'v1', served: true, storage: true }] },
};
const widget = (name: string): Manifest => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name } });

// the root (applied by hand, not in its own folder), an AppProject and three Applications of wave 1 and one of wave 2
const root = app('lab', 'dist/lab/gitops');
const widgets = app('lab-widgets', 'dist/lab/widgets', { wave: 1, retry: true });
const gadgets = app('lab-gadgets', 'dist/lab/gadgets', { wave: 1, syncOptions: ['ServerSideApply=true', 'SkipDryRunOnMissingResource=true'] });
const users = app('lab-users', 'dist/lab/users', { wave: 1, retry: true });
const late = app('lab-late', 'dist/lab/late', { wave: 2 });
const project: Manifest = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'lab', namespace: 'argocd' }, spec: {} };
const ownSsa = { ...configMap('own-ssa'), metadata: { name: 'own-ssa', annotations: { 'argocd.argoproj.io/sync-options': 'ServerSideApply=true' } } };
const binding = (name: string): Manifest => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
  metadata: { name },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
  subjects: [{ kind: 'Group', name: 'team', apiGroup: 'rbac.authorization.k8s.io' }],
} as Manifest);
// a namespace lab-users brings (wave 1), used by lab-gadgets (wave 1, SkipDryRunOnMissingResource) and lab-late (wave 2)
const shared: Manifest = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shared' } };
const inShared = (name: string): Manifest => ({ ...configMap(name), metadata: { name, namespace: 'shared' } });
// a kind whose CRD lab-late's own operator applies at run time
const gizmo: Manifest = { apiVersion: 'example.com/v1', kind: 'Gizmo', metadata: { name: 'z' } };
const rendered: RenderedSource[] = [
  source(root, [project, widgets, gadgets, users, late]),
  source(widgets, [widgetCrd, configMap('fresh'), configMap('kept', { a: '2' }), ownSsa, binding('team')]),
  source(gadgets, [widget('g'), configMap('gadget-config'), binding('team'), inShared('in-shared')]),
  source(users, [widget('u'), shared]),
  { ...source(late, [widget('l'), inShared('late-in-shared'), gizmo]), unrenderedCrds: [{ group: 'example.com', kind: 'Gizmo', scope: 'Cluster', from: 'operator' }] },
];
const view = { name: 'lab', folders: [] };
const lastApplied = JSON.stringify({ apiVersion: 'v1', data: { a: '1', gone: 'x' }, kind: 'ConfigMap', metadata: { name: 'kept', namespace: 'lab-widgets' } });
const live = {
  '/api/v1/namespaces/lab-widgets': { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lab-widgets' } },
  '/apis/rbac.authorization.k8s.io/v1/namespaces/lab-widgets/rolebindings/team': { kind: 'RoleBinding', metadata: { name: 'team' } },
  '/apis/rbac.authorization.k8s.io/v1/namespaces/lab-gadgets/rolebindings/team': { kind: 'RoleBinding', metadata: { name: 'team' } },
  '/api/v1/namespaces/lab-widgets/configmaps/kept': {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kept', namespace: 'lab-widgets', annotations: { [LAST_APPLIED]: lastApplied } }, data: { a: '1', gone: 'x' },
  },
};

async function run(warn?: (body: any) => string[]) {
  const sent: Sent[] = [];
  const result = await verifyCluster(view, rendered, fakeSession(live, sent, warn));
  const write = (method: string, path: string) => sent.find((s) => s.method === method && s.path.split('?')[0] === path);
  return { sent, result, write, finding: (object: string) => result.findings.filter((f) => f.object === object) };
}

describe('verify sends each object as Argo CD sends it', () => {
  it('client-side apply where the Application does not say ServerSideApply=true: a create with the last-applied annotation, no fieldValidation, field manager argocd-controller', async () => {
    const { write } = await run();
    const create = write('POST', '/api/v1/namespaces/lab-widgets/configmaps')!;
    expect(create.path).toBe('/api/v1/namespaces/lab-widgets/configmaps?dryRun=All&fieldManager=argocd-controller');
    expect(create.contentType).toBe('application/json');
    expect(create.body.metadata.name).toBe('fresh');
    const annotations = create.body.metadata.annotations;
    expect(annotations['argocd.argoproj.io/tracking-id']).toBe('lab-widgets:/ConfigMap:lab-widgets/fresh');
    expect(JSON.parse(annotations[LAST_APPLIED])).toEqual({ ...create.body, metadata: { ...create.body.metadata, annotations: { 'argocd.argoproj.io/tracking-id': 'lab-widgets:/ConfigMap:lab-widgets/fresh' } } });
  });

  it('an object that exists: a strategic merge patch that deletes what the last apply set and this one leaves out', async () => {
    const { write } = await run();
    const patch = write('PATCH', '/api/v1/namespaces/lab-widgets/configmaps/kept')!;
    expect(patch.path).toBe('/api/v1/namespaces/lab-widgets/configmaps/kept?dryRun=All&fieldManager=argocd-controller');
    expect(patch.contentType).toBe('application/strategic-merge-patch+json');
    expect(patch.body.data).toEqual({ a: '2', gone: null });
  });

  it('server-side apply where the Application or the object says ServerSideApply=true: an apply patch, conflicts forced, still no fieldValidation', async () => {
    const { write } = await run();
    for (const path of ['/api/v1/namespaces/lab-gadgets/configmaps/gadget-config', '/api/v1/namespaces/lab-widgets/configmaps/own-ssa']) {
      const apply = write('PATCH', path)!;
      expect(apply.path).toBe(`${path}?dryRun=All&fieldManager=argocd-controller&force=true`);
      expect(apply.contentType).toBe('application/apply-patch+yaml');
      expect(apply.body.metadata.annotations?.[LAST_APPLIED]).toBeUndefined();
    }
  });

  it('the root Application, applied by hand, is dry-run too, as kubectl apply -f sends it (fieldValidation=Strict); Argo CD never sends one', async () => {
    const { write, sent } = await run();
    const rootCreate = sent.find((s) => s.method === 'POST' && s.body?.metadata?.name === 'lab' && s.body.kind === 'Application')!;
    expect(rootCreate.path).toBe('/apis/argoproj.io/v1alpha1/namespaces/argocd/applications?dryRun=All&fieldManager=kubectl-client-side-apply&fieldValidation=Strict');
    expect(rootCreate.body.metadata.annotations?.['argocd.argoproj.io/tracking-id']).toBeUndefined();
    // the children, synced by the root: Argo CD's request
    expect(write('POST', '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications')!.path).toMatch(/fieldManager=argocd-controller$/);
    expect(sent.filter((s) => s.method !== 'GET' && s.path.includes('fieldValidation')).map((s) => s.body.metadata.name)).toEqual(['lab']);
    expect(sent.every((s) => s.method === 'GET' || s.path.includes('dryRun=All'))).toBe(true);
  });

  it('the API server\'s Warning headers are a warning of their object (an unknown field dropped), not a refusal', async () => {
    const { result, finding } = await run((o) => (o.metadata.name === 'fresh' ? ['unknown field "spec.sideways"'] : []));
    expect(finding('ConfigMap lab-widgets/fresh')).toEqual([expect.objectContaining({
      severity: 'warning',
      type: 'server-warning',
      warnings: ['unknown field "spec.sideways"'],
      message: 'accepted with a warning of the API server, as Argo CD (client-side apply) applies it (no fieldValidation: an unknown field is dropped, not refused): unknown field "spec.sideways"',
    })]);
    expect(result.counts.warned).toBe(1);
    expect(result.findings.filter((f) => f.severity === 'error').map((f) => f.object)).toEqual(['Widget g', 'RoleBinding lab-gadgets/team', 'ConfigMap shared/in-shared', 'Widget u', 'Gizmo z']);
  });

  it('a warning that drops nothing of the render (a deprecation, advice on a finalizer name) is info', async () => {
    const { finding } = await run((o) => (o.metadata.name === 'fresh' ? ['v1 ConfigMap is deprecated'] : []));
    expect(finding('ConfigMap lab-widgets/fresh')).toEqual([expect.objectContaining({
      severity: 'info', type: 'server-warning', message: 'the API server warns, as Argo CD (client-side apply) applies it: v1 ConfigMap is deprecated',
    })]);
  });

  it('a binding whose roleRef changes: recreated where Argo CD applies it client-side (kubectl auth reconcile first), refused where server-side', async () => {
    const { finding } = await run();
    expect(finding('RoleBinding lab-widgets/team')).toEqual([expect.objectContaining({ severity: 'info', type: 'recreated', paths: ['.roleRef'] })]);
    expect(finding('RoleBinding lab-gadgets/team')).toEqual([expect.objectContaining({ severity: 'error', type: 'refused', status: 422 })]);
  });

  it('a custom resource whose CRD another Application of the same wave brings: the race, an error whether or not its Application retries (crd-order: a strictly later wave)', async () => {
    const { finding, sent } = await run();
    const race = (f: VerifyFinding[]) => f.map(({ severity, type, after }) => ({ severity, type, after }));
    expect(race(finding('Widget u'))).toEqual([{ severity: 'error', type: 'crd-same-wave', after: 'wave 1 (Application lab-widgets)' }]);
    expect(finding('Widget u')[0].message).toMatch(/its dry run fails on a kind the server does not serve until that CRD is Established; Argo CD's retry \(syncPolicy.retry of lab-users\) syncs it then at best/);
    // SkipDryRunOnMissingResource=true skips the dry run only: the apply fails the same way
    expect(race(finding('Widget g'))).toEqual([{ severity: 'error', type: 'crd-same-wave', after: 'wave 1 (Application lab-widgets)' }]);
    expect(finding('Widget g')[0].message).toMatch(/its apply fails \(SkipDryRunOnMissingResource=true skips only the dry run\) .*lab-gadgets has no syncPolicy.retry, so that sync stays failed/);
    // a later wave: only not verifiable yet
    expect(race(finding('Widget l'))).toEqual([{ severity: 'info', type: 'crd-pending', after: 'wave 1 (Application lab-widgets)' }]);
    // the races are errors, counted as refused (the headline's count), the later wave's as not verified yet
    const { result } = await run();
    const refused = result.findings.filter((f) => f.severity === 'error').length;
    expect(result.counts.refused).toBe(refused);
    expect(result.counts.pending).toBe(result.findings.filter((f) => f.type === 'crd-pending' || f.type === 'namespace-pending').length);
    expect(sent.filter((s) => s.path.includes('/example.com/v1/widgets'))).toEqual([]);
  });

  it('a namespace another Application of the same wave brings is not in time either: SkipDryRunOnMissingResource skips only the dry run of a kind not served, and the Applications of one wave sync together', async () => {
    const { finding } = await run();
    const pick = (f: VerifyFinding[]) => f.map(({ severity, type, after }) => ({ severity, type, after }));
    expect(pick(finding('ConfigMap shared/in-shared'))).toEqual([{ severity: 'error', type: 'refused', after: undefined }]);
    expect(finding('ConfigMap shared/in-shared')[0].message).toMatch(/^its namespace shared arrives with wave 1 \(Application lab-users\), the same sync wave: both sync at once/);
    // a later wave: only not verifiable yet
    expect(pick(finding('ConfigMap shared/late-in-shared'))).toEqual([{ severity: 'info', type: 'namespace-pending', after: 'wave 1 (Application lab-users)' }]);
  });

  it('a custom resource whose CRD its own Application\'s operator applies at run time comes after that sync (crd-order: apply it from a later wave)', async () => {
    const { finding } = await run();
    expect(finding('Gizmo z')).toEqual([expect.objectContaining({ severity: 'error', type: 'crd-after-object' })]);
    expect(finding('Gizmo z')[0].message).toMatch(/its operator applies its CRD at run time/);
  });
});
