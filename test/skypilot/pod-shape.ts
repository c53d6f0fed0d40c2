import { parse } from 'yaml';
import { Manifest, RenderedCluster } from '../../src/render/manifest';

/**
 * The pods SkyPilot creates for the rendered tutorial task in one namespace, built the way SkyPilot
 * does from the rendered client files: one pod per node, a `ray-node` container asking for the task's
 * accelerators, CPUs and memory, `kubernetes.pod_config` merged in, the queue label from
 * `kubernetes.kueue.local_queue_name`, and one Kueue pod group (`kueue.x-k8s.io/pod-group-name` label,
 * `kueue.x-k8s.io/pod-group-total-count` annotation) for the whole multi-node cluster. A fixture for
 * the cross-object rules and the tenant guardrails, not SkyPilot's code.
 */
export function skypilotPodGroup(c: RenderedCluster, namespace: string, group = 'ddp-2ea4'): Manifest[] {
  const file = (name: string) => {
    const f = (c.clientFiles ?? []).find((x) => x.path === `skypilot/${namespace}/${name}`);
    if (!f) throw new Error(`no SkyPilot ${name} for namespace ${namespace}`);
    return parse(f.content);
  };
  const k = file('config.yaml').kubernetes;
  const task = file('train.yaml');
  const [, gpus] = String(task.resources.accelerators).split(':');
  const podConfig = k.pod_config;
  const extra = podConfig.spec.containers[0];
  const requests = {
    'cpu': String(task.resources.cpus),
    'memory': `${task.resources.memory}Gi`,
    'nvidia.com/gpu': gpus,
    ...(extra.resources?.requests ?? {}),
  };
  return Array.from({ length: task.num_nodes }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${group}-${i === 0 ? 'head' : `worker${i}`}`,
      // the kubeconfig context's namespace (released SkyPilot has no kubernetes.namespace)
      namespace,
      labels: {
        ...(podConfig.metadata?.labels ?? {}),
        'kueue.x-k8s.io/queue-name': k.kueue.local_queue_name,
        'kueue.x-k8s.io/pod-group-name': group,
      },
      annotations: { 'kueue.x-k8s.io/pod-group-total-count': String(task.num_nodes) },
    },
    spec: {
      ...podConfig.spec,
      serviceAccountName: k.remote_identity,
      containers: [{
        ...extra,
        image: String(task.resources.image_id).replace(/^docker:/, ''),
        resources: { requests, limits: { ...requests } },
      }],
    },
  }));
}
