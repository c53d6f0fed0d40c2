import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { NodePlacement, podPlacement } from '../../model/model';

export interface LocalPathProvisionerProps {
  /** Namespace to create and run in. */
  readonly namespace: string;
  /** Provisioner image, pinned. */
  readonly image: string;
  /** Name of the LocalPathConfig ConfigMap it reads. */
  readonly configMapName: string;
  /** Where the controller runs (the service node). */
  readonly placement: NodePlacement;
}

/**
 * rancher/local-path-provisioner's own objects (namespace, RBAC, Deployment), rendered only when
 * the description says the provisioner is managed here rather than pre-installed. Upstream
 * publishes no Helm repository for it, so it is rendered directly, as deploy/local-path-storage.yaml does.
 */
export class LocalPathProvisioner extends Construct {
  constructor(scope: Construct, id: string, props: LocalPathProvisionerProps) {
    super(scope, id);
    const ns = props.namespace;
    const name = 'local-path-provisioner';
    const sa = `${name}-service-account`;
    const role = `${name}-role`;
    const binding = `${name}-bind`;

    new k8s.KubeNamespace(this, 'Namespace', { metadata: { name: ns } });
    new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata: { name: sa, namespace: ns } });
    new k8s.KubeRole(this, 'Role', {
      metadata: { name: role, namespace: ns },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] }],
    });
    new k8s.KubeClusterRole(this, 'ClusterRole', {
      metadata: { name: role },
      rules: [
        { apiGroups: [''], resources: ['nodes', 'persistentvolumeclaims', 'configmaps', 'pods', 'pods/log'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    const subjects = [{ kind: 'ServiceAccount', name: sa, namespace: ns }];
    new k8s.KubeRoleBinding(this, 'RoleBinding', {
      metadata: { name: binding, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects,
    });
    new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
      metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects,
    });

    const labels = { app: name };
    new k8s.KubeDeployment(this, 'Deployment', {
      metadata: { name, namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: sa,
            ...podPlacement(props.placement),
            containers: [{
              name,
              image: props.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['local-path-provisioner', 'start', '--config', '/etc/config/config.json'],
              ports: [{ name: 'health', containerPort: 8080, protocol: 'TCP' }],
              startupProbe: { httpGet: { path: '/health', port: k8s.IntOrString.fromString('health') }, initialDelaySeconds: 5, periodSeconds: 5, failureThreshold: 12 },
              livenessProbe: { httpGet: { path: '/health', port: k8s.IntOrString.fromString('health') }, initialDelaySeconds: 10, periodSeconds: 10 },
              readinessProbe: { httpGet: { path: '/ready', port: k8s.IntOrString.fromString('health') }, initialDelaySeconds: 5, periodSeconds: 5 },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              resources: {
                requests: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('32Mi') },
                limits: { memory: k8s.Quantity.fromString('128Mi') },
              },
              volumeMounts: [{ name: 'config-volume', mountPath: '/etc/config/' }],
              env: [
                { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'CONFIG_MOUNT_PATH', value: '/etc/config/' },
                { name: 'HEALTH_PORT', value: '8080' },
              ],
            }],
            volumes: [{ name: 'config-volume', configMap: { name: props.configMapName } }],
          },
        },
      },
    });
  }
}
