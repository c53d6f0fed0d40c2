import { describe, expect, it } from 'vitest';
import { serverWarnings } from '../../src/preflight/live';
import { Manifest } from '../../src/render/manifest';
import { applyRequest, argoApplyMode, kubectlApplyMode, LAST_APPLIED, withLastApplied } from '../../src/verify/apply-request';

/*
 * The request of one apply as verify sends it (dryRun=All), per who applies: Argo CD (gitops-engine v3.5.1 sends no
 * fieldValidation and applies as argocd-controller, client-side unless ServerSideApply=true) or the README's kubectl.
 */

const app = (syncOptions: string[]) => ({ spec: { syncPolicy: { syncOptions } } });
const object = (annotations?: Record<string, string>): Manifest => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', ...(annotations ? { annotations } : {}) }, spec: { size: 2 } } as Manifest);

describe('who applies an object, and how', () => {
  it('Argo CD: client-side by default; server-side with ServerSideApply=true on the Application or the object; the object\'s ServerSideApply=false wins', () => {
    expect(argoApplyMode(object(), app([]))).toEqual({ serverSide: false, fieldManager: 'argocd-controller', by: 'Argo CD (client-side apply)' });
    expect(argoApplyMode(object(), app(['ServerSideApply=true'])).serverSide).toBe(true);
    expect(argoApplyMode(object({ 'argocd.argoproj.io/sync-options': 'Prune=false,ServerSideApply=true' }), app([])).serverSide).toBe(true);
    expect(argoApplyMode(object({ 'argocd.argoproj.io/sync-options': 'ServerSideApply=false' }), app(['ServerSideApply=true'])).serverSide).toBe(false);
    expect(argoApplyMode(object(), app(['ServerSideApply=true'])).fieldValidation).toBeUndefined();
  });

  it('the bootstrap\'s kubectl: fieldValidation=Strict (kubectl\'s default), field manager kubectl or kubectl-client-side-apply', () => {
    expect(kubectlApplyMode('kubectl apply --server-side -k dist/lab/argocd')).toMatchObject({ serverSide: true, fieldManager: 'kubectl', fieldValidation: 'Strict' });
    expect(kubectlApplyMode('kubectl apply -k dist/lab/gitops')).toMatchObject({ serverSide: false, fieldManager: 'kubectl-client-side-apply', fieldValidation: 'Strict' });
  });
});

describe('the request', () => {
  const csa = argoApplyMode(object(), app([]));

  it('the last-applied annotation is the object without it, keys sorted as kubectl encodes it', () => {
    const o = withLastApplied(object({ z: '1', [LAST_APPLIED]: 'old' }));
    expect(o.metadata.annotations![LAST_APPLIED]).toBe('{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"z":"1"},"name":"w"},"spec":{"size":2}}\n');
    expect(JSON.parse(withLastApplied(object()).metadata.annotations![LAST_APPLIED]).metadata).toEqual({ name: 'w' });
  });

  it('a custom resource that exists: a JSON merge patch, deleting what the last apply set (map by map)', () => {
    const last = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', labels: { old: 'x' } }, spec: { size: 1, color: 'red' } };
    const r = applyRequest(object(), csa, { metadata: { annotations: { [LAST_APPLIED]: JSON.stringify(last) } } }, true);
    expect(r).toMatchObject({ method: 'PATCH', collection: false, query: '?dryRun=All&fieldManager=argocd-controller', contentType: 'application/merge-patch+json' });
    const body = JSON.parse(r.body);
    expect(body.spec).toEqual({ size: 2, color: null });
    expect(body.metadata.labels).toBeNull();
  });

  it('a live object without a last-applied annotation (synced server-side before): the object, nothing deleted', () => {
    const r = applyRequest(object(), csa, { metadata: {} }, false);
    expect(r.contentType).toBe('application/strategic-merge-patch+json');
    expect(JSON.parse(r.body).spec).toEqual({ size: 2 });
  });

  it('an object without a name (generateName) is created, whatever the mode', () => {
    const unnamed = { ...object(), metadata: { generateName: 'w-' } } as unknown as Manifest;
    expect(applyRequest(unnamed, argoApplyMode(unnamed, app(['ServerSideApply=true'])), undefined, true)).toMatchObject({ method: 'POST', collection: true });
  });
});

describe('the API server\'s Warning headers', () => {
  it('their texts, unescaped; another header left out; a header of another form as it is', () => {
    expect(serverWarnings(['Warning', '299 - "unknown field \\"spec.x\\""', 'Content-Type', 'application/json', 'warning', 'odd'])).toEqual(['unknown field "spec.x"', 'odd']);
  });
});
