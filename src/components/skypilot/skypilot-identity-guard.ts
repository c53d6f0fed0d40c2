import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { SKYPILOT_IDENTITY, SKYPILOT_WORKLOAD_IDENTITY } from './client-files';
import { LABELS } from '../../model/names';

export interface SkyPilotIdentityGuardProps {
  /** Namespaces holding SkyPilot identities (SkyPilotIdentity). */
  readonly namespaces: readonly string[];
  /**
   * Name prefix of the policies and their bindings.
   * @default "skypilot-identities"
   */
  readonly name?: string;
}

const API_VERSION = 'admissionregistration.k8s.io/v1';
const TOKEN_SECRET = 'kubernetes.io/service-account-token';
const TOKEN_SECRET_ACCOUNT = 'kubernetes.io/service-account.name';

/**
 * Keeps the SkyPilot identities' rights with SkyPilot (ValidatingAdmissionPolicy, GA since Kubernetes 1.30).
 * Kubernetes lets anyone who may create pods in a namespace run them as any of its ServiceAccounts, and
 * anyone who may create Secrets mint a long-lived token for one; a tenant may do both in its namespace.
 * RBAC's own doors are shut already: tenants hold no RBAC rights, so they can neither `bind` nor
 * `escalate` to a SkyPilot Role, nor `impersonate` its ServiceAccount, nor request its token.
 *
 * - No pod runs as the launcher (`skypilot`): its Role (Secrets, exec, node reads) stays with whoever
 *   holds its token, which an administrator issues.
 * - A pod runs as the workload identity (`skypilot-workload`, autodown) only when the launcher itself
 *   creates it: SkyPilot creates plain pods, never through a controller.
 * - No Secret of type service-account-token names either ServiceAccount.
 */
export class SkyPilotIdentityGuard extends Construct {
  readonly podPolicyName: string;
  readonly secretPolicyName: string;

  constructor(scope: Construct, id: string, props: SkyPilotIdentityGuardProps) {
    super(scope, id);
    if (props.namespaces.length === 0) throw new Error('namespaces: the SkyPilot identity guard needs at least one namespace');
    const prefix = props.name ?? 'skypilot-identities';
    this.podPolicyName = `${prefix}-pods`;
    this.secretPolicyName = `${prefix}-tokens`;
    const launcher = JSON.stringify(SKYPILOT_IDENTITY);
    const workload = JSON.stringify(SKYPILOT_WORKLOAD_IDENTITY);
    const namespaceSelector = { matchExpressions: [{ key: LABELS.namespaceName, operator: 'In', values: [...props.namespaces] }] };

    this.policy(this.podPolicyName, namespaceSelector, {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
      // serviceAccount is the deprecated alias of serviceAccountName; both are immutable after creation.
      variables: [{
        name: 'accounts',
        expression: '[has(object.spec.serviceAccountName) ? object.spec.serviceAccountName : "", has(object.spec.serviceAccount) ? object.spec.serviceAccount : ""]',
      }],
      validations: [
        {
          expression: `!variables.accounts.exists(a, a == ${launcher})`,
          message: `no pod runs as the ServiceAccount ${SKYPILOT_IDENTITY}: it is SkyPilot's launcher identity (Secrets, exec, reading nodes); `
            + `SkyPilot's pods run as ${SKYPILOT_WORKLOAD_IDENTITY}`,
        },
        {
          expression: `!variables.accounts.exists(a, a == ${workload}) || request.userInfo.username == "system:serviceaccount:" + request.namespace + ":" + ${launcher}`,
          message: `only SkyPilot (the ServiceAccount ${SKYPILOT_IDENTITY} of this namespace) creates pods that run as ${SKYPILOT_WORKLOAD_IDENTITY}`,
        },
      ],
    });
    this.policy(this.secretPolicyName, namespaceSelector, {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['secrets'] }] },
      validations: [{
        expression: `!has(object.type) || object.type != ${JSON.stringify(TOKEN_SECRET)} || !has(object.metadata.annotations) `
          + `|| !(${JSON.stringify(TOKEN_SECRET_ACCOUNT)} in object.metadata.annotations) `
          + `|| !(object.metadata.annotations[${JSON.stringify(TOKEN_SECRET_ACCOUNT)}] in [${launcher}, ${workload}])`,
        message: `no long-lived token Secret for the SkyPilot ServiceAccounts ${SKYPILOT_IDENTITY} and ${SKYPILOT_WORKLOAD_IDENTITY}: `
          + 'it would hand their rights to whoever reads the Secret (an administrator issues short-lived tokens with kubectl create token)',
      }],
    });
  }

  private policy(name: string, namespaceSelector: object, spec: Record<string, unknown>): void {
    new ApiObject(this, name, { apiVersion: API_VERSION, kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec: { failurePolicy: 'Fail', ...spec } });
    new ApiObject(this, `${name}-binding`, {
      apiVersion: API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector } },
    });
  }
}
