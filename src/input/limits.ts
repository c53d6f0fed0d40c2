import { InputError } from '../errors';

/** The files a command reads besides its own output: what they are and how far they may go. */
export type InputKind = 'description' | 'snapshot' | 'kubeconfig' | 'project';
/** The package.json of another installed toolkit (upgrade-plan --from-toolkit DIR): read as data, never run. */
export type PackageInputKind = 'package';
/**
 * What check reads for the engines: a file an Application names in a chart or overlay (values files, patches,
 * Chart.yaml), what an engine printed (helm template, kustomize build), and a YAML file of a rendered tree.
 */
export type EngineInputKind = 'chart' | 'render' | 'tree';
/** The files of a schema folder (`--schemas`): CRD YAML files and the core definitions' JSON. */
export type SchemaInputKind = 'schema';
/** Every kind of input with limits. */
export type LimitedInput = InputKind | EngineInputKind | SchemaInputKind | PackageInputKind;

interface InputLimitSpec {
  /** What the file is, for messages ("far more than a cluster description needs"). */
  readonly what: string;
  /** What to name instead when the path is not a regular file. */
  readonly hint: string;
  /** Largest file, in MiB, unless the environment variable says otherwise. */
  readonly mib: number;
  readonly env: string;
  /** Deepest nesting of mappings and lists. */
  readonly depth: number;
  /** YAML aliases (`*name`) of mappings and lists a file may use. */
  readonly aliases: number;
}

/**
 * The limits of every input file, in one place (docs/guarantees.md, "Limits of every input", lists them).
 * A description is a few KiB and nests 6 levels; a complete snapshot of an Instant Cluster with
 * its CRDs is a few MiB and nests 37 levels (CRD schemas inside a List); a kubeconfig with
 * embedded certificates is a few KiB. Sizes are checked before a byte is read, so a device, a
 * disk image or a log is refused at once; nesting and aliases bound the parser's recursion and
 * what an alias bomb could expand to.
 */
export const INPUT_LIMITS: Readonly<Record<LimitedInput, InputLimitSpec>> = {
  description: { what: 'a cluster description', hint: 'name a YAML or JSON description file', mib: 8, env: 'GPU_CLUSTER_MANIFESTS_MAX_DESCRIPTION_MIB', depth: 32, aliases: 100 },
  snapshot: { what: 'a cluster snapshot', hint: 'name the file kubectl get ... -o yaml wrote', mib: 64, env: 'GPU_CLUSTER_MANIFESTS_MAX_SNAPSHOT_MIB', depth: 100, aliases: 100 },
  kubeconfig: { what: 'a kubeconfig', hint: 'name a kubeconfig file', mib: 4, env: 'GPU_CLUSTER_MANIFESTS_MAX_KUBECONFIG_MIB', depth: 32, aliases: 100 },
  // the largest file of a pinned chart is a CRD bundle of 2.6 MB; values files and patches are KiB
  chart: { what: 'a file of a chart or overlay', hint: 'name a file of the chart or overlay', mib: 16, env: 'GPU_CLUSTER_MANIFESTS_MAX_CHART_FILE_MIB', depth: 100, aliases: 1000 },
  // the largest pinned chart renders 3.2 MB with its CRDs (which nest some 40 levels), kube-prometheus-stack some 8 MB;
  // each run in flight holds its output some three times over while it is parsed; helm and kustomize print no aliases
  render: { what: 'a render of a chart or overlay', hint: 'check the engine', mib: 32, env: 'GPU_CLUSTER_MANIFESTS_MAX_ENGINE_OUTPUT_MIB', depth: 100, aliases: 1000 },
  // a rendered file holds one object; the largest (a CRD) is 1.5 MB
  tree: { what: 'a file of a rendered tree', hint: 'a rendered tree holds YAML files', mib: 64, env: 'GPU_CLUSTER_MANIFESTS_MAX_MANIFEST_MIB', depth: 100, aliases: 1000 },
  // the largest pinned schema file is a CRD of 1.6 MB (Dynamo's DynamoGraphDeployment); CRD schemas nest some 60 levels in a List
  schema: { what: 'a schema file (CRDs or the core definitions)', hint: 'a schema folder holds CRD YAML files and a *definitions.json', mib: 32, env: 'GPU_CLUSTER_MANIFESTS_MAX_SCHEMA_FILE_MIB', depth: 200, aliases: 1000 },
  // this package's package.json is some 5 KiB and nests 3 levels
  package: { what: 'a package.json', hint: 'name the folder of an installed gpu-cluster-manifests (node_modules/gpu-cluster-manifests)', mib: 1, env: 'GPU_CLUSTER_MANIFESTS_MAX_PACKAGE_MIB', depth: 16, aliases: 0 },
  // gpu-cluster-manifests.yaml: two keys
  project: { what: 'a project file', hint: 'gpu-cluster-manifests.yaml must be a file (clusters: and out:)', mib: 1, env: 'GPU_CLUSTER_MANIFESTS_MAX_PROJECT_MIB', depth: 8, aliases: 10 },
};

/** Largest size any limit may be raised to: a Buffer, and the text decoded from it, must fit. */
const MAX_MIB = 1024;

/** The size limit of an input kind in bytes: the environment variable when set (MiB, fractions allowed), else the default. */
export function maxBytes(kind: LimitedInput): number {
  const spec = INPUT_LIMITS[kind];
  const raw = process.env[spec.env];
  if (raw === undefined || raw === '') return spec.mib * 1024 * 1024;
  const mib = Number(raw);
  if (!Number.isFinite(mib) || mib <= 0 || mib > MAX_MIB) throw new InputError(`${spec.env}=${raw}: expected a size in MiB greater than 0 and at most ${MAX_MIB}`);
  return Math.floor(mib * 1024 * 1024);
}

/** `8 MiB`, `0.5 MiB`, `10.24 KiB`. */
export function formatMiB(bytes: number): string {
  return bytes < 1024 * 1024 ? `${Number((bytes / 1024).toFixed(2))} KiB` : `${Number((bytes / 1024 / 1024).toFixed(2))} MiB`;
}

/** How to raise a kind's size limit, for messages. */
export function raiseHint(kind: LimitedInput): string {
  return `${INPUT_LIMITS[kind].env}=<MiB> raises the limit`;
}
