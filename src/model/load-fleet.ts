import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ClusterDescription } from './description';
import { isDescriptionFile } from './description-files';
import { FLEET_FILE, FleetDescription, FleetDescriptionSchema, MAX_MULTIKUEUE_WORKERS, MultiKueueDescription } from './fleet';
import { DescriptionError, DescriptionIssue, describeDescriptionIssue, readYamlDescription, toIssues } from './load';
import { ClusterModel } from './model';
import { dispatchedQueue } from './multikueue';
import { DispatchGroup, MULTIKUEUE_GROUP, MultiKueueManagerRole, MultiKueueRole, queueGroupName } from './multikueue-role';
import { yamlPositions } from '../input/read';
import { isJsonObject } from '../json';

/** A description loaded for a render (or to work out a fleet): its file, what it says, its model without a fleet role. */
export interface LoadedDescription {
  readonly file: string;
  readonly description: ClusterDescription;
  readonly model: ClusterModel;
}

/**
 * The fleet description of a folder of cluster descriptions, when it has one: anything named FLEET_FILE. What is no
 * regular file (a FIFO, a device, a folder, a link that leads nowhere) is the fleet description all the same, and the
 * bounded reader refuses it like every other input: never a fleet silently rendered as plain clusters.
 */
export function fleetFileOf(folder: string): string | undefined {
  const file = path.join(folder, FLEET_FILE);
  return lstatSync(file, { throwIfNoEntry: false }) ? file : undefined;
}

/** A fleet description read and validated, with where its fields are. */
export interface FleetFile {
  readonly file: string;
  readonly fleet: FleetDescription;
  /** As written (before defaults): which settings the file gives itself. */
  readonly raw: Readonly<Record<string, unknown>>;
  readonly positionOf: (segments: readonly PropertyKey[]) => { line: number; column: number } | undefined;
}

/** Reads and validates a fleet description. Throws DescriptionError (one line per problem, each with file:line:col and field path). */
export function readFleetFile(file: string): FleetFile {
  const { raw, text } = readYamlDescription(file);
  const positionOf = yamlPositions(text);
  if (raw !== null && raw !== undefined && !isJsonObject(raw)) {
    throw new DescriptionError(file, [{ path: '', message: 'expected a mapping of fleet fields at the top level (multiKueue:)' }]);
  }
  const given = (raw ?? {}) as Record<string, unknown>;
  if ('name' in given && 'nodes' in given) {
    throw new DescriptionError(file, [{ path: '', message: `${FLEET_FILE} is the fleet description (multiKueue:), never a cluster's: give this cluster description another file name`, ...positionOf(['name']) }]);
  }
  const result = FleetDescriptionSchema.safeParse(given, { reportInput: true });
  if (!result.success) throw new DescriptionError(file, toIssues(result.error.issues, given, positionOf, FleetDescriptionSchema));
  return { file, fleet: result.data, raw: given, positionOf };
}

type PositionOf = (segments: readonly PropertyKey[]) => { line: number; column: number } | undefined;

/** Problems of a fleet, each one line naming a file, where in it, the field path and what is wrong. */
class Problems {
  readonly lines: string[] = [];
  private readonly positions = new Map<string, PositionOf | undefined>();

  constructor(private readonly fleet: FleetFile) {}

  /** A problem of the fleet description. */
  fleetField(segments: readonly PropertyKey[], message: string): void {
    this.push(this.fleet.file, segments, message, this.fleet.positionOf);
  }

  /** A problem of a member's own description (positions read again from its YAML or JSON text, for the few refused fields). */
  descriptionField(file: string, segments: readonly PropertyKey[], message: string): void {
    if (!this.positions.has(file)) {
      this.positions.set(file, /\.(ya?ml|json)$/i.test(file) ? yamlPositions(readFileSync(file, 'utf8')) : undefined);
    }
    this.push(file, segments, message, this.positions.get(file));
  }

  private push(file: string, segments: readonly PropertyKey[], message: string, positionOf?: PositionOf): void {
    const issue: DescriptionIssue = { path: formatSegments(segments), message, ...positionOf?.(segments) };
    this.lines.push(describeDescriptionIssue(file, issue));
  }
}

function formatSegments(segments: readonly PropertyKey[]): string {
  return segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : `${i === 0 ? '' : '.'}${String(s)}`)).join('');
}

/** What a cluster description of a MultiKueue manager may not say: its ClusterQueues' quotas are its workers'. */
function managerRestrictions(manager: LoadedDescription, fleetFile: string, problems: Problems): void {
  const d = manager.description;
  const why = `the MultiKueue manager's ClusterQueues hold the sum of their workers' quotas (${FLEET_FILE})`;
  const refuse = (segments: readonly PropertyKey[], message: string) => problems.descriptionField(manager.file, segments, message);
  d.tenants.forEach((t, i) => {
    if (t.gpus !== 0) refuse(['tenants', i, 'gpus'], `${why}: set 0 (the workers' tenants of the same namespace and queue hold the GPUs), got ${t.gpus}`);
    if (t.borrowingOnly) refuse(['tenants', i, 'borrowingOnly'], `${why}: a manager's tenant borrows what its workers' tenants may borrow; drop it`);
    if (t.borrowingLimit !== undefined) refuse(['tenants', i, 'borrowingLimit'], `${why}: borrowing limits apply on the workers; drop it`);
    if (t.lendingLimit !== undefined) refuse(['tenants', i, 'lendingLimit'], `${why}: lending limits apply on the workers; drop it`);
  });
  if (d.queueing.borrowingLimit !== null) refuse(['queueing', 'borrowingLimit'], `${why}: borrowing limits apply on the workers; drop it`);
  if (d.queueing.lendingLimit !== null) refuse(['queueing', 'lendingLimit'], `${why}: lending limits apply on the workers; drop it`);
  if (d.queueing.topology) {
    refuse(['queueing', 'topology'], `the MultiKueue manager runs no jobs, its workers place them: describe the topology on the workers (${path.basename(fleetFile)} makes the manager's flavor topology-aware when they have one)`);
  }
  if (d.tutorials.skypilot.enabled) refuse(['tutorials', 'skypilot', 'enabled'], 'the MultiKueue manager runs no jobs of its own: follow the tutorial on a worker');
  if (d.tutorials.dynamo.enabled) refuse(['tutorials', 'dynamo', 'enabled'], 'the MultiKueue manager runs no jobs of its own: render the Dynamo samples on a worker');
}

/** Settings of the fleet that live in the Kueue configuration the toolkit renders for a managed Kueue only. */
const KUEUE_CONFIG_SETTINGS = ['dispatcher', 'gcInterval', 'origin', 'workerLostTimeout', 'clusterProfile'] as const;

/**
 * The roles of a MultiKueue fleet's members, by cluster name, from the fleet description and every member's
 * description (`byName`); the problems instead when it does not hold together.
 */
export function multiKueueRoles(
  fleet: FleetFile, byName: ReadonlyMap<string, LoadedDescription>,
): { roles: Map<string, MultiKueueRole>; problems: string[] } {
  const mk = fleet.fleet.multiKueue;
  const roles = new Map<string, MultiKueueRole>();
  if (!mk) return { roles, problems: [] };
  const problems = new Problems(fleet);
  const known = () => [...byName.keys()].sort().join(', ') || 'none';
  const manager = byName.get(mk.manager);
  if (!manager) problems.fleetField(['multiKueue', 'manager'], `no cluster description in ${path.dirname(fleet.file)} is named "${mk.manager}" (clusters: ${known()})`);
  const seen = new Map<string, number>();
  mk.workers.forEach((w, i) => {
    const at = ['multiKueue', 'workers', i, 'cluster'];
    if (w.cluster === mk.manager) problems.fleetField(at, `"${w.cluster}" is the manager; Kueue does not let a manager be its own worker`);
    else if (seen.has(w.cluster)) problems.fleetField(at, `worker "${w.cluster}" is listed twice (also multiKueue.workers[${seen.get(w.cluster)}])`);
    else if (!byName.has(w.cluster)) problems.fleetField(at, `no cluster description in ${path.dirname(fleet.file)} is named "${w.cluster}" (clusters: ${known()})`);
    if (!seen.has(w.cluster)) seen.set(w.cluster, i);
  });
  if (!manager) return { roles, problems: problems.lines };

  const managerQueues = manager.model.queueing.queues.map((q) => q.clusterQueue);
  const listed = new Set<string>();
  for (const [queue, workers] of Object.entries(mk.queues)) {
    if (!managerQueues.includes(queue)) {
      problems.fleetField(['multiKueue', 'queues', queue], `"${queue}" is no ClusterQueue of the manager ${mk.manager} (its ClusterQueues: ${managerQueues.join(', ')})`);
      continue;
    }
    if (queueGroupName(queue).length > 63) {
      problems.fleetField(['multiKueue', 'queues', queue], `its AdmissionCheck and MultiKueueConfig would be named "${queueGroupName(queue)}", longer than the 63 characters Kueue allows; shorten the ClusterQueue's name`);
    }
    if (workers.length > MAX_MULTIKUEUE_WORKERS) {
      problems.fleetField(['multiKueue', 'queues', queue], `${workers.length} workers, but a MultiKueueConfig holds at most ${MAX_MULTIKUEUE_WORKERS}`);
    }
    const inList = new Map<string, number>();
    workers.forEach((name, i) => {
      if (inList.has(name)) problems.fleetField(['multiKueue', 'queues', queue, i], `worker "${name}" is listed twice (also [${inList.get(name)}])`);
      else if (!seen.has(name)) problems.fleetField(['multiKueue', 'queues', queue, i], `"${name}" is not in multiKueue.workers (${[...seen.keys()].join(', ')})`);
      inList.set(name, i);
      listed.add(name);
    });
  }
  const toAll = managerQueues.filter((q) => !(q in mk.queues));
  if (toAll.length > 0 && mk.workers.length > MAX_MULTIKUEUE_WORKERS) {
    problems.fleetField(['multiKueue', 'workers'], `${mk.workers.length} workers, but a MultiKueueConfig holds at most ${MAX_MULTIKUEUE_WORKERS}, and ClusterQueue(s) ${toAll.join(', ')} `
      + 'of the manager dispatch to all of them: give each its workers in multiKueue.queues');
  }
  if (toAll.length === 0) {
    mk.workers.forEach((w, i) => {
      if (!listed.has(w.cluster)) problems.fleetField(['multiKueue', 'workers', i, 'cluster'], `no ClusterQueue of the manager dispatches to "${w.cluster}" (multiKueue.queues lists it nowhere)`);
    });
  }
  const managed = manager.description.installs.kueue === 'managed';
  const profiled = mk.workers.findIndex((w) => w.clusterProfile !== undefined);
  if (profiled >= 0 && !managed) {
    problems.fleetField(['multiKueue', 'workers', profiled, 'clusterProfile'], `a ClusterProfile needs Kueue's feature gate MultiKueueClusterProfile, which the toolkit sets only for a Kueue it installs: set installs.kueue: managed in ${path.basename(manager.file)}, or use kubeconfigSecret`);
  } else if (profiled >= 0 && !mk.clusterProfile) {
    problems.fleetField(['multiKueue', 'workers', profiled, 'clusterProfile'], 'a ClusterProfile needs multiKueue.clusterProfile.accessProviders (how Kueue gets the credentials of the cluster it describes)');
  }
  if (!managed) {
    const given = isJsonObject(fleet.raw.multiKueue) ? fleet.raw.multiKueue : {};
    for (const key of KUEUE_CONFIG_SETTINGS) {
      if (key in given && !(key === 'clusterProfile' && profiled >= 0)) {
        problems.fleetField(['multiKueue', key], `a setting of the Kueue configuration, which the toolkit renders only for a Kueue it installs: set installs.kueue: managed in ${path.basename(manager.file)}, or drop it (Kueue's default then)`);
      }
    }
  }
  managerRestrictions(manager, fleet.file, problems);
  if (problems.lines.length > 0) return { roles, problems: problems.lines };

  const workerModels = new Map(mk.workers.map((w) => [w.cluster, byName.get(w.cluster)!.model]));
  const groups: DispatchGroup[] = [
    ...(toAll.length > 0 ? [{ name: MULTIKUEUE_GROUP, workers: mk.workers.map((w) => w.cluster) }] : []),
    ...managerQueues.filter((q) => q in mk.queues).map((q) => ({ name: queueGroupName(q), workers: [...mk.queues[q]] })),
  ];
  const groupOf = (queue: string) => groups.find((g) => g.name === (queue in mk.queues ? queueGroupName(queue) : MULTIKUEUE_GROUP))!;
  let queues: MultiKueueManagerRole['queues'];
  try {
    queues = manager.model.queueing.queues.map((q) => dispatchedQueue(q, groupOf(q.clusterQueue), workerModels));
  } catch (e) {
    return { roles, problems: [`${fleet.file}: multiKueue: ${(e as Error).message}`] };
  }
  roles.set(mk.manager, {
    role: 'manager',
    workers: mk.workers.map((w) => ({
      cluster: w.cluster,
      ...(w.kubeconfigSecret
        ? { kubeconfigSecret: w.kubeconfigSecret, ...(w.server ? { server: w.server } : {}) }
        : { clusterProfile: w.clusterProfile! }),
    })),
    groups,
    queues,
    settings: settingsOf(mk),
    accessProviders: (mk.clusterProfile?.accessProviders ?? []).map((p) => ({
      name: p.name, command: p.command, args: [...p.args], apiVersion: p.apiVersion,
    })),
    pytorchJobs: mk.workers.every((w) => byName.get(w.cluster)!.description.installs.trainingOperator !== 'none'),
  });
  for (const w of mk.workers) roles.set(w.cluster, { role: 'worker', manager: mk.manager });
  return { roles, problems: [] };
}

function settingsOf(mk: MultiKueueDescription): MultiKueueManagerRole['settings'] {
  return { dispatcher: mk.dispatcher, gcInterval: mk.gcInterval, origin: mk.origin, workerLostTimeout: mk.workerLostTimeout };
}

/** Description files of a folder (sorted names). */
function folderDescriptions(folder: string): string[] {
  return readdirSync(folder).filter(isDescriptionFile).sort().map((f) => path.join(folder, f));
}

/**
 * The fleet roles of loaded descriptions (by file): for each folder they come from that has a fleet description, the
 * fleet is read and worked out from its members' descriptions, loading those not loaded yet (`load`) when a loaded
 * description is a member or the whole folder is loaded. Problems go to `problems`, one line each.
 */
export function fleetRoles(
  loaded: readonly LoadedDescription[], load: (file: string) => LoadedDescription | undefined, problems: string[],
): Map<string, MultiKueueRole> {
  const out = new Map<string, MultiKueueRole>();
  const folders = new Map<string, LoadedDescription[]>();
  for (const l of loaded) {
    const folder = path.dirname(path.resolve(l.file));
    folders.set(folder, [...(folders.get(folder) ?? []), l]);
  }
  for (const [folder, here] of folders) {
    const file = fleetFileOf(folder);
    if (file === undefined) continue;
    let fleet: FleetFile;
    try {
      fleet = readFleetFile(file);
    } catch (e) {
      if (e instanceof DescriptionError) {
        problems.push(e.message);
        continue;
      }
      throw e;
    }
    const mk = fleet.fleet.multiKueue;
    if (!mk) continue;
    const members = new Set([mk.manager, ...mk.workers.map((w) => w.cluster)]);
    const all = folderDescriptions(folder);
    const loadedFiles = new Set(here.map((l) => path.resolve(l.file)));
    const whole = all.every((f) => loadedFiles.has(path.resolve(f)));
    if (!whole && !here.some((l) => members.has(l.description.name))) continue;
    const byName = new Map<string, LoadedDescription>();
    for (const l of here) if (!byName.has(l.description.name)) byName.set(l.description.name, l);
    if ([...members].some((m) => !byName.has(m))) {
      for (const f of all) {
        if (loadedFiles.has(path.resolve(f))) continue;
        const l = load(f);
        if (l && !byName.has(l.description.name)) byName.set(l.description.name, l);
      }
    }
    const { roles, problems: found } = multiKueueRoles(fleet, byName);
    problems.push(...found);
    for (const l of here) {
      const role = roles.get(l.description.name);
      if (role && byName.get(l.description.name) === l) out.set(l.file, role);
    }
  }
  return out;
}
