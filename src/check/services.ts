import { ClusterIndex } from './cluster-index';
import { Rule, Violation } from './rule';
import { LABELS } from '../model/names';
import { describeObject, Manifest } from '../render/manifest';

interface NodePortClaim {
  readonly service: Manifest;
  /** What a finding names first: the Service, or the Application whose chart or overlay renders it. */
  readonly owner: Manifest;
  /** `Service ns/name`, with the render it comes from. */
  readonly label: string;
  /** Field path of the port, e.g. `spec.ports[0].nodePort`. */
  readonly path: string;
  readonly port: number;
  readonly protocol: string;
}

/** Every node port a Service asks for (ports of any Service type that set nodePort): rendered, and of the managed installs. */
function nodePortClaims(index: ClusterIndex): NodePortClaim[] {
  const out: NodePortClaim[] = [];
  const services = [
    ...index.ofKind('Service', '').map((service) => ({ service, owner: service, label: describeObject(service) })),
    ...index.installObjects().filter((i) => i.object.kind === 'Service' && i.object.apiVersion === 'v1')
      .map((i) => ({ service: i.object, owner: i.source.application, label: `${describeObject(i.object)} (${i.source.what})` })),
  ];
  for (const { service, owner, label } of services) {
    const ports = (service.spec as { ports?: { nodePort?: unknown; protocol?: string }[] } | undefined)?.ports ?? [];
    ports.forEach((p, i) => {
      if (typeof p.nodePort === 'number') out.push({ service, owner, label, path: `spec.ports[${i}].nodePort`, port: p.nodePort, protocol: p.protocol ?? 'TCP' });
    });
  }
  return out;
}

const same = (a: Manifest, name: string, namespace: string) => a.metadata.name === name && a.metadata.namespace === namespace;

/**
 * The API server allocates each node port once per cluster (one Service may use a number for TCP and UDP
 * alike); a second claim is refused with "provided port is already allocated", and so is a claim on a port
 * that an object outside the rendered tree holds (model.allocatedNodePorts: the pre-installed Dashboard's).
 * The Service that holds such a port may be rendered only when it is adopted (taken over, never deleted).
 */
const nodePortUnique: Rule = {
  id: 'nodeport-unique',
  severity: 'error',
  summary: 'no two Services (rendered, or of a managed install) claim one node port, and none claims a port the cluster already allocates (the pre-installed Dashboard\'s, unless that Service is adopted)',
  check(index) {
    const out: Violation[] = [];
    const claims = nodePortClaims(index);
    claims.forEach((c, i) => {
      const earlier = claims.slice(0, i).find((o) => o.port === c.port && (o.service !== c.service || o.protocol === c.protocol));
      if (earlier) {
        out.push({
          message: `${c.owner === c.service ? '' : `${c.label}: `}${c.path} ${c.port} is also claimed by ${earlier.label} (${earlier.path}); `
            + 'the API server allocates a node port once ("provided port is already allocated")',
          objects: [c.owner, earlier.owner],
        });
      }
      for (const a of index.model?.allocatedNodePorts ?? []) {
        if (a.port !== c.port) continue;
        if (same(c.service, a.service.name, a.service.namespace)) {
          if (c.service.metadata.annotations?.[LABELS.adopted] !== 'true') {
            out.push({
              message: `takes over the ${a.what}'s Service without marking it adopted (${LABELS.adopted}: "true"); set monitoring.dashboard.service: adopt`,
              objects: [c.service],
            });
          }
          continue;
        }
        out.push({
          message: `${c.owner === c.service ? '' : `${c.label}: `}${c.path} ${c.port} is already allocated to Service ${a.service.namespace}/${a.service.name} (${a.what}); the API server refuses it `
            + '("provided port is already allocated"): choose a free port or adopt that Service (monitoring.dashboard.service)',
          objects: [c.owner],
        });
      }
    });
    return out;
  },
};

export const SERVICE_RULES: readonly Rule[] = [nodePortUnique];
