import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readClusters, renderClusterSources } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { loadModels } from '../../src/synth/pipeline';
import { planSync, vendoredCrds } from '../../src/twin/argocd-sync';
import { ControlPlane } from '../../src/twin/control-plane';
import { KubeClient, KubeObject } from '../../src/twin/kube-client';
import { planOf } from '../../src/twin/kueue';
import { lockNamespace, MPI_OPERATOR_INSTALL, MpiOperatorInstall, mpiOperatorInstallOf, startMpiOperator } from '../../src/twin/mpi-operator';
import { ManagedStarts, serviceAccountToken, TOKEN_SECONDS, untilOnServer } from '../../src/twin/operator-process';
import { TrainingOperatorInstall, trainingOperatorInstallOf } from '../../src/twin/training-operator';
import { HAS_SCHEMAS, HAS_UPSTREAM, TRAINING_FILE } from '../paths';

// The twin's controllers' shared start (operator-process.ts) where no twin is needed: the wait for an install's
// objects, the token's lifetime, a managed start that fails, and the MPI Operator's install read from a real render.

/** A client whose server holds the objects at `present` (by API path), and answers TokenRequests with `granted` seconds. */
function fakeClient(present: readonly string[], granted = TOKEN_SECONDS): KubeClient {
  return {
    get: async (p: string) => (present.includes(p) ? { apiVersion: 'v1', kind: 'X', metadata: { name: path.basename(p) } } as KubeObject : undefined),
    call: async (_method: string, _path: string, opts: { body: { spec: { expirationSeconds: number } } }) => ({
      status: { token: 't0k3n', expirationTimestamp: new Date(Date.now() + Math.min(granted, opts.body.spec.expirationSeconds) * 1000).toISOString() },
    }),
  } as unknown as KubeClient;
}

describe('untilOnServer', () => {
  it('answers the objects once every one is there, in the order asked', async () => {
    const got = await untilOnServer(fakeClient(['/a/one', '/a/two']), ['/a/two', '/a/one'], 'the install', { timeoutMs: 0 });
    expect(got.map((o) => o.metadata.name)).toEqual(['two', 'one']);
  });

  it('throws naming exactly what is not there when the time is up', async () => {
    await expect(untilOnServer(fakeClient(['/a/one']), ['/a/one', '/a/two', '/a/three'], 'the MPI Operator\'s install', { timeoutMs: 0 }))
      .rejects.toThrow('the MPI Operator\'s install was not on the server within 0 s: not there: /a/two, /a/three');
  });

  it('throws at once when the twin stops', async () => {
    await expect(untilOnServer(fakeClient([]), ['/a/one'], 'the managed Kueue\'s install', { timeoutMs: 60_000, stopped: () => true }))
      .rejects.toThrow('the twin stopped before the managed Kueue\'s install was on the server');
  });
});

describe('serviceAccountToken', () => {
  it('asks for a token that outlives any twin (a year) and answers it when granted', async () => {
    expect(TOKEN_SECONDS).toBeGreaterThanOrEqual(365 * 24 * 3600);
    expect(await serviceAccountToken(fakeClient([]), 'mpi-operator', 'mpi-operator')).toBe('t0k3n');
  });

  it('throws when the API server grants less (its --service-account-max-token-expiration): credentials lost mid-run otherwise', async () => {
    await expect(serviceAccountToken(fakeClient([], 3600), 'kueue-system', 'kueue-controller-manager'))
      .rejects.toThrow(/ServiceAccount kueue-system\/kueue-controller-manager .*\(3600 s\), not the 31536000 s asked/);
  });
});

describe.skipIf(!HAS_UPSTREAM || !HAS_SCHEMAS)('the MPI and Training Operators\' installs, from the training cluster\'s render', () => {
  const out = mkdtempSync(path.join(tmpdir(), 'mpi-install-'));
  let install: MpiOperatorInstall;
  let training: TrainingOperatorInstall;
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  beforeAll(async () => {
    expect(await main(['synth', '--config', TRAINING_FILE, '--out', out, '--quiet'])).toBe(EXIT.ok);
    const [model] = loadModels([TRAINING_FILE]);
    const view = { ...readClusters(out).find((c) => c.name === model.name)!, model };
    const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, reruns: false });
    // built-in kinds only in these installs (and CRDs): no server's discovery needed
    const plan = planSync(view, renders, vendoredCrds(DEFAULT_SCHEMAS), new Map());
    install = mpiOperatorInstallOf(planOf(plan, MPI_OPERATOR_INSTALL));
    training = trainingOperatorInstallOf(plan);
  }, 300_000);

  it('is the Deployment of the pinned overlay: its namespace, ServiceAccount, arguments and the bindings of its rights', () => {
    expect(install.namespace).toBe('mpi-operator');
    expect(install.serviceAccount).toBe('mpi-operator');
    expect(install.args).toContain('--lock-namespace=mpi-operator');
    expect(install.needs[0]).toBe('/api/v1/namespaces/mpi-operator/serviceaccounts/mpi-operator');
    expect(install.needs.slice(1)).toContain('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/mpi-operator');
    expect(install.needs.slice(1).every((p) => p.startsWith('/apis/rbac.authorization.k8s.io/v1/'))).toBe(true);
    expect(lockNamespace(install.args)).toBe('mpi-operator');
  });

  it('lockNamespace reads --lock-namespace in either form, and defaults to the command\'s mpi-operator', () => {
    expect(lockNamespace(['-alsologtostderr', '--lock-namespace', 'ops'])).toBe('ops');
    expect(lockNamespace(['-lock-namespace=ops'])).toBe('ops');
    expect(lockNamespace(install.args.filter((a) => !a.includes('lock-namespace')))).toBe('mpi-operator');
  });

  it('a managed MPI Operator whose install Argo CD never syncs fails to start, and the twin says why in one line', async () => {
    const starts = new ManagedStarts();
    const cp = { client: () => fakeClient(install.needs.slice(1)) } as unknown as ControlPlane;
    await expect(starts.follow('MPI Operator', startMpiOperator(cp, install, { syncedTimeoutMs: 0 }), () => {
      throw new Error('started');
    })).rejects.toThrow();
    expect(starts.failure).toBe(`the managed MPI Operator did not start: the MPI Operator's install was not on the server within 0 s: not there: ${install.needs[0]}`);
  });

  it('the Training Operator\'s: the Deployment of the pinned standalone overlay with the schemes the toolkit enables, and its webhook\'s Service, Secret and configuration', () => {
    expect(training.namespace).toBe('kubeflow');
    expect(training.serviceAccount).toBe('training-operator');
    expect(training.args).toContain('--enable-scheme=pytorchjob');
    expect(training.args).not.toContain('--enable-scheme=mpijob');
    expect(training.service).toBe('/api/v1/namespaces/kubeflow/services/training-operator');
    expect(training.needs).toEqual([
      '/api/v1/namespaces/kubeflow/serviceaccounts/training-operator',
      ...training.needs.filter((p) => p.startsWith('/apis/rbac.authorization.k8s.io/v1/')),
      training.service,
      '/api/v1/namespaces/kubeflow/secrets/training-operator-webhook-cert',
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/validator.training-operator.kubeflow.org',
    ]);
    expect(training.needs).toContain('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/training-operator');
  });
});
