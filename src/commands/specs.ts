import { CommandSpec, OPTIONS, OptionTable, RENDER_OPTIONS } from './options';
import { INPUT_LIMITS } from '../input/limits';
import { PACKAGE_NAME, SCHEMA_FILE_NAME } from '../paths';
import { PROJECT_FILE } from '../project/names';
import { prebuiltLayout, requiredGoVersion } from '../twin/binary';

/*
 * What each command is, for its --help and the global help: usage, summary, description and option table
 * (what parseArgs parses). Here, apart from what the commands do, so that the help is printed without
 * loading the render stack.
 */

/** Default time of the whole live read (--timeout). */
export const LIVE_TIMEOUT_MS = 30_000;
/** Default time of verify's whole live run (--timeout): two requests for each object of the render. */
export const VERIFY_TIMEOUT_MS = 120_000;
/** Default time of a whole rehearsal (--timeout): the twin's start, the bootstrap and every wave (the binaries had). */
export const REHEARSE_TIMEOUT_MS = 600_000;
/**
 * Default time of a rehearsal of a description that manages an install (installs.<x>: managed): Argo CD installs the
 * operators and their CRDs first, wave 0 (the training example's bootstrap: 565 s quiet, 897 s at load 13-26).
 */
export const REHEARSE_MANAGED_TIMEOUT_MS = 2 * REHEARSE_TIMEOUT_MS;
/**
 * Default time of a change rehearsal (--from): two converged states, the commit's bootstrap and then the push, each
 * given the bootstrap's bound (docs/commands.md#rehearse: a warm change rehearsal took 7 min at load 14-22).
 */
export const REHEARSE_CHANGE_TIMEOUT_MS = 2 * REHEARSE_TIMEOUT_MS;
/** The most a rehearsal may be given (--timeout). */
export const REHEARSE_MAX_TIMEOUT_MS = 3_600_000;

const SYNTH_OPTIONS = { ...RENDER_OPTIONS, 'quiet': OPTIONS.quiet, 'allow-delete': OPTIONS['allow-delete'] } as const satisfies OptionTable;

const VALIDATE_OPTIONS = {
  schemas: OPTIONS.schemas,
  format: OPTIONS.format,
  quiet: OPTIONS.quiet,
  help: OPTIONS.help,
} as const satisfies OptionTable;

const SCHEMA_OPTIONS = {
  out: { type: 'string', value: 'FILE', help: `write the JSON Schema to FILE (default: ${SCHEMA_FILE_NAME} in the project's descriptions folder; - prints it)` },
  readme: { type: 'string', value: 'FILE', help: 'regenerate the field reference section of FILE (between its description-reference markers)' },
  quiet: { ...OPTIONS.quiet, help: 'print errors only (no line per file written)' },
  help: OPTIONS.help,
} as const satisfies OptionTable;

/** `synth`: render descriptions into manifests. */
export const SYNTH: CommandSpec<typeof SYNTH_OPTIONS> = {
  name: 'synth',
  usage: `${PACKAGE_NAME} synth [--config FILE ... --out DIR]`,
  summary: 'render descriptions into manifests (every description of the project into its output folder, or --config FILE ...)',
  description: 'Without --config: every description in the project\'s descriptions folder (gpu-cluster-manifests.yaml, found from '
    + 'the working folder upwards: clusters:) into its output folder (out:, default dist/) as <out>/<cluster>/, plus <out>/fleet/ (an '
    + 'ApplicationSet pointing a hub Argo CD at every cluster); the whole output folder is replaced. With --config FILE '
    + '(repeatable): those descriptions into <out>/<cluster>/ only (--out DIR, or the project\'s output folder). Each cluster is rendered, validated against the upstream schemas, checked by '
    + 'the cross-object rules and written to a temporary folder beside its target; then every folder is swapped in at once. '
    + 'On any error the previous output is left byte-identical. A render that would remove rendered objects (Argo CD prunes '
    + 'them) or files of yours exits 1 and writes nothing, unless --allow-delete; each is listed with what Argo CD does with '
    + 'it where that is not a plain prune, and what stays in the cluster (a CRD, a Prune=false object) needs no flag. A fleet shows its progress per cluster on stderr; the '
    + 'summary (objects per folder and kind, files written, time) goes to stdout.',
  options: SYNTH_OPTIONS,
  failed: 'a validation or a cross-object check failed (nothing was written)',
};

/** `validate`: strict schema validation of rendered trees. */
export const VALIDATE: CommandSpec<typeof VALIDATE_OPTIONS> = {
  name: 'validate',
  usage: `${PACKAGE_NAME} validate DIR|FILE ... [--schemas DIR]`,
  summary: 'validate rendered manifests (folders or files) strictly against the upstream schemas',
  description: 'Strict schema validation of every object in the given folders or files, as the API server and kubeconform\'s '
    + 'strict mode do: unknown fields are errors, duplicates (per cluster folder) are errors, deprecated API versions warn.',
  options: VALIDATE_OPTIONS,
  failed: 'an object is invalid',
};

/** `schema`: the description's JSON Schema. */
export const SCHEMA: CommandSpec<typeof SCHEMA_OPTIONS> = {
  name: 'schema',
  usage: `${PACKAGE_NAME} schema [--out FILE|-]`,
  summary: 'write the JSON Schema of the cluster description beside the descriptions (editor autocompletion)',
  description: `Writes the JSON Schema of the cluster description to ${SCHEMA_FILE_NAME} in the project's descriptions folder, the file `
    + 'the $schema line of every description names (after updating the toolkit, run it again), and the fleet description\'s (fleet.schema.json) beside it; '
    + 'outside a project, or with --out -, it prints the cluster description\'s. --readme FILE regenerates the field reference sections of FILE.',
  options: SCHEMA_OPTIONS,
};

const CHECK_OPTIONS = {
  'config': { ...OPTIONS.config, help: 'the description of a checked cluster (its capacity), when not the project\'s of the same name; YAML, JSON or TypeScript (.ts); repeatable' },
  'schemas': { ...OPTIONS.schemas, help: 'CRD YAML files and core definitions that tell which kinds are cluster-scoped; repeatable (default: the pinned ones the package ships)' },
  'upstream': OPTIONS.upstream,
  'format': OPTIONS.format,
  'quiet': OPTIONS.quiet,
  'list-rules': OPTIONS['list-rules'],
  'help': OPTIONS.help,
} as const satisfies OptionTable;

/** `check`: the cross-object rules over rendered trees. */
export const CHECK: CommandSpec<typeof CHECK_OPTIONS> = {
  name: 'check',
  usage: `${PACKAGE_NAME} check [DIR ...]`,
  summary: 'cross-object rules over rendered trees (default: the project\'s output folder), one cluster per folder',
  description: 'Runs the cross-object rules over rendered trees (default: the project\'s output folder), one cluster per folder: queue labels -> '
    + 'LocalQueues -> ClusterQueues -> flavors, resources covered, quotas and MPIJob ranks fit the GPUs, one nic-cluster-policy, '
    + 'one RDMA name, one default StorageClass, Application paths and sync waves, no privileged containers, no latest images, '
    + 'no Secret data. Every Application is rendered as Argo CD renders it, with helm and kustomize (charts and overlays from '
    + '--upstream DIR, folders of the tree), and what the installs create is checked too: AppProject permissions, placement '
    + 'of every pod template, CRDs before their CRs, released versions and images. Capacity comes from the description of '
    + 'the same name. synth runs the rules that need no engine before it writes.',
  options: CHECK_OPTIONS,
  failed: 'a rule found an error',
};

const DIFF_OPTIONS = {
  ...RENDER_OPTIONS,
  'out': { ...RENDER_OPTIONS.out, help: 'the rendered output to compare with (default: the project\'s output folder, dist/)' },
  'format': { ...RENDER_OPTIONS.format, help: 'text (default) or json (every change, machine-readable)' },
  'allow-delete': { type: 'boolean', help: 'exit 0 even when objects would be deleted' },
  'quiet': { ...OPTIONS.quiet, help: 'print errors only: the deletions refused, nothing when there is none' },
} as const satisfies OptionTable;

/** `diff`: what a fresh render would change. */
export const DIFF: CommandSpec<typeof DIFF_OPTIONS> = {
  name: 'diff',
  usage: `${PACKAGE_NAME} diff [--config FILE ... --out DIR] [--allow-delete]`,
  summary: 'what a fresh render would add, remove or change in the output folder (exit 1 on a deletion)',
  description: 'Renders into a temporary folder (as synth would, --config FILE ... for some clusters only) and prints, per cluster '
    + 'and object (its folder, kind, namespace and name), what would be added, removed or changed (field paths) against the '
    + 'project\'s output folder (or --out DIR): after updating the toolkit, what the new version renders differently. Writes '
    + 'nothing. Exits 1 when an object Argo CD would delete would be removed, unless --allow-delete; each is listed as synth '
    + 'lists it, and what stays in the cluster (a CRD, a Prune=false object) asks nothing.',
  options: DIFF_OPTIONS,
  failed: 'an object would be deleted (without --allow-delete), or the render failed its validation or checks',
};

/** Options of the commands that read a cluster (`preflight`, `init`). */
export const CLUSTER_SOURCE_OPTIONS = {
  snapshot: { type: 'string', value: 'FILE', help: `the cluster's state as \`kubectl get ... -o yaml\` output (docs/pre-installed-cluster.md has the command); at most ${INPUT_LIMITS.snapshot.mib} MiB (${INPUT_LIMITS.snapshot.env})` },
  kubeconfig: { type: 'string', value: '[PATH]', help: 'read the cluster live instead (GET requests only) through this kubeconfig (default: $KUBECONFIG or ~/.kube/config, as kubectl)' },
  context: { type: 'string', value: 'NAME', help: 'the kubeconfig context to use (default: its current context)' },
  timeout: { type: 'string', value: 'SECONDS', help: `bounds the whole live read: exec credential plugin, connect, TLS and every answer (default: ${LIVE_TIMEOUT_MS / 1000}, at most 600)` },
} as const satisfies OptionTable;

const PREFLIGHT_OPTIONS = {
  'config': { type: 'string', value: 'FILE', help: 'the description to compare: YAML, JSON or TypeScript (.ts)' },
  ...CLUSTER_SOURCE_OPTIONS,
  'format': OPTIONS.format,
  'quiet': OPTIONS.quiet,
  'list-rules': { ...OPTIONS['list-rules'], help: 'print every rule id, its family and what it finds, then exit' },
  'help': OPTIONS.help,
} as const satisfies OptionTable;

/** `preflight`: the render compared with a cluster. */
export const PREFLIGHT: CommandSpec<typeof PREFLIGHT_OPTIONS> = {
  name: 'preflight',
  usage: `${PACKAGE_NAME} preflight --config FILE (--snapshot FILE | --kubeconfig [PATH] [--context NAME])`,
  summary: 'compare what synth would render with a cluster (a snapshot or live; read-only)',
  description: 'Compares what synth would render for --config with the cluster\'s state, read from a snapshot (--snapshot FILE) '
    + 'or live (--kubeconfig; GET requests only): immutable fields, allocated node ports, quota counted twice, missing APIs, '
    + 'drift of the nodes from the description, Kueue configuration, objects Argo CD would take over or prune. Each finding '
    + 'names the fix.',
  options: PREFLIGHT_OPTIONS,
  failed: 'a blocking finding',
};

const INIT_OPTIONS = {
  ...CLUSTER_SOURCE_OPTIONS,
  name: { type: 'string', value: 'NAME', help: 'the cluster\'s name (DNS-1123 label; names dist/<name>/)' },
  repo: { type: 'string', value: 'URL', help: 'the Git repository Argo CD reads the rendered manifests from (gitops.repoURL; default: the remote origin of the project\'s Git checkout)' },
  path: { type: 'string', value: 'DIR', help: 'the folder of the rendered cluster in that repository (gitops.path; default: <out>/<name> of the project, else dist/<name>)' },
  out: { type: 'string', value: 'FILE', help: 'write the description to FILE, never overwritten (default: <name>.yaml in the project\'s descriptions folder; - prints it, as outside a project)' },
  quiet: { ...OPTIONS.quiet, help: 'print errors only (the description itself still goes to stdout with --out -)' },
  help: OPTIONS.help,
} as const satisfies OptionTable;

/** `init`: a description from a cluster. */
export const INIT: CommandSpec<typeof INIT_OPTIONS> = {
  name: 'init',
  usage: `${PACKAGE_NAME} init (--snapshot FILE | --kubeconfig [PATH] [--context NAME]) [--name NAME --repo URL --path DIR] [--out FILE|-]`,
  summary: 'write a description from a cluster (a snapshot or live; read-only)',
  description: 'Writes a cluster description from what the cluster shows (the same sources as preflight): the service node\'s '
    + 'taints, the GPU workers\' count, GPUs, product, allocatable CPU and memory, taints, the RDMA resource, the default '
    + 'StorageClass, the pre-wired queue. What it cannot observe or decide (mixed GPU products, for one) is marked TODO(init) '
    + 'with the alternatives; a cluster without GPU workers is refused (exit 2).',
  options: INIT_OPTIONS,
};

const NEW_OPTIONS = { quiet: { ...OPTIONS.quiet, help: 'print errors only (not what was made, nor the next steps)' }, help: OPTIONS.help } as const satisfies OptionTable;

/** `new`: a clusters repository. */
export const NEW: CommandSpec<typeof NEW_OPTIONS> = {
  name: 'new',
  usage: `${PACKAGE_NAME} new DIR`,
  summary: 'make a clusters repository in DIR (new or empty): the pinned toolkit, the project file, a CI script',
  description: `Makes a clusters repository in DIR (created; an existing one must be empty): package.json pinning ${PACKAGE_NAME} `
    + `at this version, ${PROJECT_FILE} (descriptions in clusters/, output in dist/), .gitignore, a README of the workflow, ci.sh `
    + '(npm test: renders, fails when the committed dist/ differs, runs check) and clusters/ with the description\'s JSON Schema. '
    + 'Then: cd DIR && npm install, and init writes the first description into clusters/. Needs none of the toolkit\'s dependencies.',
  options: NEW_OPTIONS,
};

const UPGRADE_PLAN_OPTIONS = {
  'config': { type: 'string', value: 'FILE', help: 'the description of the cluster to upgrade: YAML, JSON or TypeScript (.ts)' },
  'component': { type: 'string', value: 'NAME', help: 'gpu-operator, network-operator, kueue or all (default: all)' },
  'from': { type: 'string', value: 'VERSION', help: 'the release of --component the cluster runs (default: the previous release the package carries of it)' },
  'to': { type: 'string', value: 'VERSION', help: 'the release of --component to go to: the one this toolkit pins (the default)' },
  'from-toolkit': {
    type: 'string',
    value: 'DIR',
    help: `toolkit to toolkit: another installed version of ${PACKAGE_NAME} (its node_modules/${PACKAGE_NAME} folder); its synth renders the description, and each component goes from the release it pins to the one this version pins`,
  },
  'from-crds': {
    type: 'string',
    multiple: true,
    value: 'PATH',
    help: 'the CRDs the cluster has now (kubectl get crd NAME -o yaml, with their status.storedVersions; files or folders, repeatable), in place of the old release\'s of the same kinds',
  },
  'to-crds': { type: 'string', multiple: true, value: 'PATH', help: 'CRDs to go to, in place of the pinned ones of the same kinds (repeatable); --from-crds and --to-crds without --config compare just those' },
  'snapshot': {
    ...CLUSTER_SOURCE_OPTIONS.snapshot,
    help: 'plan from the cluster as a snapshot shows it: each component from the release it runs (its Deployment, else its CRD), its CRDs, adopted CRs and DaemonSets as they are',
  },
  'kubeconfig': { ...CLUSTER_SOURCE_OPTIONS.kubeconfig, help: 'plan from the live cluster (GET requests only, as preflight reads it) through this kubeconfig, as --snapshot plans from a snapshot' },
  'context': CLUSTER_SOURCE_OPTIONS.context,
  'timeout': CLUSTER_SOURCE_OPTIONS.timeout,
  'upstream': OPTIONS.upstream,
  'format': { ...OPTIONS.format, help: 'text (default: a summary, the blockers, maintenance windows, behaviour changes and warnings) or json (every finding, and the order as data: each step\'s objects, by file or render)' },
  'verbose': { ...OPTIONS.verbose, help: 'after the summary, every finding by section, the informational ones too, each with the files it read' },
  'quiet': { ...OPTIONS.quiet, help: 'print the blockers only (nothing when there is none)' },
  'help': OPTIONS.help,
} as const satisfies OptionTable;

/** `upgrade-plan`: an upgrade planned from the real renders of both releases. */
export const UPGRADE_PLAN: CommandSpec<typeof UPGRADE_PLAN_OPTIONS> = {
  name: 'upgrade-plan',
  usage: `${PACKAGE_NAME} upgrade-plan --config FILE [--component gpu-operator|network-operator|kueue|all] [--from VERSION --to VERSION | --from-toolkit DIR | --kubeconfig [PATH] | --snapshot FILE]`,
  summary: 'plan an operator upgrade (or one of the toolkit) from the real renders of both releases: CRD changes, re-validation, order, node and control-plane impact, defaults, ownership',
  description: 'Renders the cluster of --config at both ends with helm, from the vendored charts of the release it runs (--from, default the '
    + 'previous release the package carries) and of the pinned one (--to), and compares them in seven sections, each finding typed and naming '
    + 'the files it read: 1. CRD changes per CRD and version (removed fields, type changes, new requirements with or without a default, '
    + 'stricter and relaxed validation, new CEL rules compiled, served and storage versions, storedVersions, size past the client-side apply '
    + 'limit); 2. re-validation of every rendered custom resource against the other end\'s CRD, defaults applied (CRD first, rollback blocked); '
    + '3. the order by Argo CD sync wave (a step that sends a new-form resource to an old CRD blocks; --format json gives each step\'s objects); '
    + '4. GPU-node impact of each operand image (kernel module reload and drain, device-plugin restart, DaemonSet roll) with the upgrade '
    + 'policy as rendered; 5. webhooks whose pods roll, with their failurePolicy; 6. upstream defaults that changed and are not pinned here, '
    + 'pinned values now below them; 7. objects two Applications apply. --from-toolkit DIR plans the move from another installed version of '
    + 'the toolkit instead (its render of the same description). --from-crds/--to-crds put given CRDs in place of the vendored ones (a '
    + 'cluster\'s own, with their storedVersions). --kubeconfig (or --snapshot) plans from what the cluster runs: each operator\'s release, '
    + 'its CRDs, the CRs Argo CD adopted and the DaemonSets that run, never pods it does not run. Reads only: nothing written.',
  options: UPGRADE_PLAN_OPTIONS,
  failed: 'a blocker: the upgrade as rendered breaks something (the plan says what)',
};

const VERIFY_OPTIONS = {
  config: { type: 'string', value: 'FILE', help: 'render this description (in a temporary folder) instead of reading a rendered one: YAML, JSON or TypeScript (.ts)' },
  kubeconfig: { type: 'string', value: '[PATH]', help: 'the live cluster, through this kubeconfig (default: $KUBECONFIG or ~/.kube/config, as kubectl)' },
  context: CLUSTER_SOURCE_OPTIONS.context,
  timeout: { type: 'string', value: 'SECONDS', help: `bounds the whole live run: exec credential plugin, connect, TLS, every request and answer (default: ${VERIFY_TIMEOUT_MS / 1000}, at most 600)` },
  upstream: OPTIONS.upstream,
  format: { ...OPTIONS.format, help: 'text (default: one line per refusal, per warning and per object that would change, one for those not verifiable yet) or json (every finding and the counts)' },
  verbose: { ...OPTIONS.verbose, help: 'one line per object not verifiable yet too (its CRD or namespace comes earlier in the sync), naming what brings it' },
  quiet: OPTIONS.quiet,
  help: OPTIONS.help,
} as const satisfies OptionTable;

/** `verify`: a server-side dry run of the rendered cluster against the live one. */
export const VERIFY: CommandSpec<typeof VERIFY_OPTIONS> = {
  name: 'verify',
  usage: `${PACKAGE_NAME} verify [DIR | --config FILE] --kubeconfig [PATH] [--context NAME]`,
  summary: 'dry-run the rendered cluster against the live one as Argo CD would sync it: what the API server would refuse, what would change',
  description: 'Sends every object of the rendered cluster (DIR: a cluster folder such as dist/lab, or an output folder holding one cluster; '
    + 'default: the project\'s output folder; or --config FILE, rendered in a temporary folder) and of every Application\'s charts and '
    + 'overlays (rendered with helm and kustomize, as check renders them) to the live API server as Argo CD sends it: client-side apply '
    + '(server-side, conflicts forced, where ServerSideApply=true), field manager argocd-controller, no fieldValidation (an unknown field '
    + 'is a warning), with its tracking annotation; the bootstrap and the root Application as kubectl applies them; but as a dry run '
    + '(dryRun=All: admission, schemas, CEL rules, immutable fields, policies and webhooks run; nothing is persisted), in Argo CD\'s '
    + 'order (the bootstrap, then each Application by sync wave, phase and resource wave). Reports each object the server would refuse; '
    + 'an object whose CRD or namespace an earlier wave of the render brings cannot be checked by a dry run and is named with that wave, '
    + 'one whose CRD comes only after it is an error, one whose CRD another Application of its wave brings a race; objects that exist and would change are listed with the fields (info). Secrets '
    + 'are dry-run, never read. The identity needs get, create and patch on what the render applies (docs/commands.md#verify).',
  options: VERIFY_OPTIONS,
  failed: 'the API server would refuse an object (or its CRD comes only after it)',
};

const REHEARSE_OPTIONS = {
  config: { type: 'string', value: 'FILE', help: 'the description to rehearse: YAML, JSON or TypeScript' },
  from: { type: 'string', value: '[REV]', help: 'change mode: converge the description as it is at commit REV of its Git repository first (default HEAD: your uncommitted edit is the change), then push the working tree\'s render and report what the push does' },
  snapshot: { ...CLUSTER_SOURCE_OPTIONS.snapshot, help: 'run the cluster\'s own Nodes (names, labels, taints, allocatable) instead of those the description implies, from `kubectl get nodes -o yaml` output, as init reads it' },
  kubeconfig: { ...CLUSTER_SOURCE_OPTIONS.kubeconfig, help: `run the cluster's own Nodes, read live (GET requests only, within ${LIVE_TIMEOUT_MS / 1000} s) through this kubeconfig (default: $KUBECONFIG or ~/.kube/config, as kubectl)` },
  context: { ...CLUSTER_SOURCE_OPTIONS.context, help: 'the kubeconfig context of --kubeconfig (default: its current context)' },
  binaries: { type: 'string', value: 'DIR', help: 'take the twin\'s binaries from DIR (prebuilt; the list below) instead of building them with Go' },
  timeout: { type: 'string', value: 'SECONDS', help: `bounds the whole rehearsal once the binaries are there: the twin's start, the bootstrap and every wave (default: ${REHEARSE_TIMEOUT_MS / 1000}, ${REHEARSE_MANAGED_TIMEOUT_MS / 1000} where the description manages an install; twice that with --from, which converges two states; at most ${REHEARSE_MAX_TIMEOUT_MS / 1000})` },
  verbose: { ...OPTIONS.verbose, help: 'print every state change of every Application, and the CPU seconds of each process of the twin at the end' },
  quiet: { ...OPTIONS.quiet, help: 'print errors only: each Application that does not converge (no progress, no timeline)' },
  help: OPTIONS.help,
} as const satisfies OptionTable;

/** `rehearse`: the bootstrap synced by a real Argo CD on a local twin of the cluster. */
export const REHEARSE: CommandSpec<typeof REHEARSE_OPTIONS> = {
  name: 'rehearse',
  usage: `${PACKAGE_NAME} rehearse --config FILE [--from [REV]] [--snapshot FILE | --kubeconfig [PATH] [--context NAME]] [--binaries DIR] [--timeout SECONDS] [--verbose | --quiet]`,
  summary: 'see the bootstrap converge before you push it: synced by a real Argo CD on a local twin of the cluster',
  // read when the help is printed: the versions come from the Go modules the package ships
  get description(): string {
    return 'Loads --config and runs synth\'s cross-object checks over its render (a problem or an error finding: exit 2, one line each, before '
      + 'anything starts; at --from REV the description at REV too). Renders it (with its repository pointed at a local Git server) in a scratch folder and starts a twin of the cluster on this '
      + 'machine: a Kubernetes control plane, the described nodes run by KWOK (or the cluster\'s own Nodes, with --snapshot FILE or --kubeconfig: '
      + 'their names, labels, taints and allocatable as init reads them, the taints of a node in trouble left off), what the cluster has before Argo CD (the pre-installed '
      + 'add-ons\' CRDs and namespaces, a pre-installed Kueue running for real, stand-ins of the GPU and Network Operators), then runs the '
      + 'bootstrap of the cluster\'s README and lets a real Argo CD sync every wave. Shows each Application\'s sync and health (a live '
      + 'display on a terminal, plain lines otherwise), then the timeline. Exit 0 when every Application is Synced and Healthy within '
      + '--timeout, 1 naming each one that is not and what it waits on. With --from REV (change mode) the description as it is at commit '
      + 'REV of its Git repository converges first, then the working tree\'s render is pushed as the next commit: the report says which '
      + 'Applications change and sync (by wave, how long), which pods are replaced on which node kind (a DaemonSet roll on the GPU '
      + 'workers first), what Kueue does to the sample jobs submitted before the push (evicted, admitted, stays admitted; each with --verbose) '
      + 'and what is pruned; exit 0 when the change converges, 1 as above. Nothing is written to the project or its output folder; every '
      + 'process is stopped and the scratch folder removed on exit, Ctrl-C or a crash. '
      + `The binaries: with Go ${requiredGoVersion()} or later on PATH they are built once per machine into the user's cache `
      + '(~/.cache/gpu-cluster-manifests/, some 20 minutes and a few GB of memory the first time); or --binaries DIR holds them, '
      + `built from the Go modules the package ships (in node_modules/${PACKAGE_NAME}/): ${prebuiltLayout().join('; ')}.`;
  },
  options: REHEARSE_OPTIONS,
  failed: 'an Application did not become Synced and Healthy within --timeout (each is named with what it waits on)',
};
