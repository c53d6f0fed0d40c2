import { z } from 'zod';
import { FLEET_FILE } from './description-files';
import { dnsLabel, dnsSubdomain, goDuration, labelValue, nonEmptyString } from './schema-types';

export { FLEET_FILE };

/**
 * The fleet description: `fleet.yaml` beside the cluster descriptions (the project's clusters folder), what no
 * single cluster's description can say. Today one section: a MultiKueue fleet, a manager cluster whose Kueue admits
 * Workloads and dispatches them to worker clusters (Kueue v0.19 MultiKueue). Field docs end up in the JSON Schema
 * (`fleet.schema.json`) and in docs/description.md.
 */

/** Kueue's limit on the clusters of one MultiKueueConfig (kueue.x-k8s.io/v1beta2 spec.clusters maxItems). */
export const MAX_MULTIKUEUE_WORKERS = 20;

/** Dispatcher names of the Kueue configuration (config.kueue.x-k8s.io/v1beta2 multiKueue.dispatcherName). */
export const MULTIKUEUE_DISPATCHERS = {
  AllAtOnce: 'kueue.x-k8s.io/multikueue-dispatcher-all-at-once',
  Incremental: 'kueue.x-k8s.io/multikueue-dispatcher-incremental',
} as const;

const worker = z.strictObject({
  cluster: dnsLabel().describe('Name of the worker cluster (the `name` of a cluster description in this folder); names its MultiKueueCluster on the manager.'),
  kubeconfigSecret: dnsSubdomain().optional()
    .describe('Name of the Secret in the manager\'s Kueue namespace (kueue-system) whose key `kubeconfig` holds the kubeconfig the manager reaches this worker with. '
      + 'Only the name: the Secret is created by hand (dist/fleet/README.md gives the commands) and never rendered. Exactly one of kubeconfigSecret and clusterProfile.'),
  server: z.url({ protocol: /^https$/, error: 'expected the https:// address of the worker\'s API server, as the manager\'s pods reach it' }).optional()
    .describe('The worker\'s API server as the manager\'s pods reach it (https://host:port: an address routable from the manager\'s pod network, often not '
      + 'the one in an administrator\'s kubeconfig, such as a bastion or a local tunnel), written into the kubeconfig of its Secret (kubeconfigSecret only). '
      + 'Unset: the fleet page\'s commands take the worker context\'s own server and say to check it.'),
  clusterProfile: dnsSubdomain().optional()
    .describe('Name of the ClusterProfile (multicluster.x-k8s.io, in kueue-system on the manager, kept by your cluster inventory) the manager reaches this worker through; '
      + 'switches on Kueue\'s MultiKueueClusterProfile feature gate (alpha in v0.19) and needs multiKueue.clusterProfile.accessProviders and installs.kueue: managed on the manager.'),
}).superRefine((w, ctx) => {
  if ((w.kubeconfigSecret === undefined) === (w.clusterProfile === undefined)) {
    ctx.addIssue({ code: 'custom', path: [], message: 'give exactly one of kubeconfigSecret (a Secret name) and clusterProfile (a ClusterProfile name): how the manager reaches this worker' });
  }
  if (w.server !== undefined && w.kubeconfigSecret === undefined) {
    ctx.addIssue({ code: 'custom', path: ['server'], message: 'the server goes into a kubeconfig Secret: only with kubeconfigSecret (a ClusterProfile names its own)' });
  }
});

const accessProvider = z.strictObject({
  name: nonEmptyString('an access provider name').describe('Name of the access provider, as the ClusterProfiles\' status.accessProviders name it.'),
  command: nonEmptyString('a command').describe('The credential plugin inside the manager\'s Kueue container (client.authentication.k8s.io exec plugin), e.g. /plugins/gcp-auth-plugin.'),
  args: z.array(z.string()).default([]).describe('Arguments of the plugin.'),
  apiVersion: z.enum(['client.authentication.k8s.io/v1beta1', 'client.authentication.k8s.io/v1'], { error: 'expected "client.authentication.k8s.io/v1beta1" or "client.authentication.k8s.io/v1"' })
    .default('client.authentication.k8s.io/v1beta1').describe('The exec credential API the plugin speaks.'),
});

const multiKueue = z.strictObject({
  manager: dnsLabel().describe('Name of the manager cluster (the `name` of a cluster description in this folder): its ClusterQueues admit Workloads and dispatch them to the workers.'),
  workers: z.array(worker, { error: 'expected a list of workers' }).min(1, { error: 'expected at least one worker' })
    .describe('The worker clusters in dispatch order (the Incremental dispatcher nominates them in this order), each with how the manager reaches it. '
      + `Every ClusterQueue of the manager dispatches to all of them unless multiKueue.queues names its own; a MultiKueueConfig holds at most ${MAX_MULTIKUEUE_WORKERS}.`),
  queues: z.record(dnsLabel(), z.array(dnsLabel(), { error: 'expected a list of worker cluster names' }).min(1, { error: 'expected at least one worker' }), {
    error: 'expected a map of the manager\'s ClusterQueue names to lists of worker cluster names',
  }).default({})
    .describe('The workers of a ClusterQueue of the manager (its default ClusterQueue or a tenant\'s), in dispatch order, when not all of `workers`: each such queue gets its own '
      + `AdmissionCheck and MultiKueueConfig (multikueue-<queue>); needed for fleets of more than ${MAX_MULTIKUEUE_WORKERS} workers.`),
  dispatcher: z.enum(['AllAtOnce', 'Incremental'], { error: 'expected "AllAtOnce" or "Incremental"' }).default('AllAtOnce')
    .describe('How Kueue picks workers for a Workload: "AllAtOnce" copies it to every worker of its queue and keeps the first to admit it; "Incremental" nominates them in order, '
      + 'a few at a time (3, every 5 minutes). The Kueue configuration\'s multiKueue.dispatcherName.'),
  gcInterval: goDuration().default('1m').describe('Kueue configuration multiKueue.gcInterval: how often the manager deletes objects it created on the workers whose Workload is gone ("0": never).'),
  origin: labelValue().min(1, { error: 'expected a label value such as "multikueue"' }).default('multikueue')
    .describe('Kueue configuration multiKueue.origin: the kueue.x-k8s.io/multikueue-origin label on what the manager creates on the workers (its garbage collector deletes only those); '
      + 'two managers sharing a worker need different origins.'),
  workerLostTimeout: goDuration().default('15m')
    .describe('Kueue configuration multiKueue.workerLostTimeout: how long a Workload stays admitted on the manager after the connection to its worker is lost, before it is dispatched again.'),
  clusterProfile: z.strictObject({
    accessProviders: z.array(accessProvider).min(1, { error: 'expected at least one access provider' })
      .describe('Access providers of the Kueue configuration (multiKueue.clusterProfile.accessProviders): how Kueue gets credentials for a ClusterProfile\'s cluster.'),
  }).optional().describe('ClusterProfile access (workers[].clusterProfile): the credential plugins Kueue runs; their binaries must be in the manager\'s Kueue container.'),
}).describe('A MultiKueue fleet: the manager cluster and its workers.');

export const FleetDescriptionSchema = z.strictObject({
  multiKueue: multiKueue.optional(),
}).describe('What spans clusters: fleet.yaml beside the cluster descriptions.');

/** The fleet description as written (before defaults). */
export type FleetDescriptionInput = z.input<typeof FleetDescriptionSchema>;
/** The fleet description with every default applied. */
export type FleetDescription = z.output<typeof FleetDescriptionSchema>;
export type MultiKueueDescription = NonNullable<FleetDescription['multiKueue']>;
