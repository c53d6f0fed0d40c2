#!/usr/bin/env node
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { CheckFailed, formatFinding } from './check/engine';
import { engineLines, runCheck } from './commands/check';
import { runDiff } from './commands/diff';
import { consoleIo, EXIT, Io } from './commands/io';
import { RENDER_OPTIONS, renderInputs, schemaDirs } from './commands/options';
import { fsErrorText, inputErrorLines, isFsError, outputFormat, WriteFailed } from './errors';
import { runInit } from './init/command';
import { descriptionJsonSchemaText, withDescriptionReference } from './model/json-schema';
import { CLUSTERS_DIR, DEFAULT_OUT, SCHEMA_FILE } from './paths';
import { InputError, synth, SynthResult, ValidationFailed } from './pipeline';
import { runPreflight } from './preflight/command';
import { DeletionRefused, deletionLines } from './render/deletions';
import { recoverAround } from './render/write';
import { SchemaDirectoryMissing, SchemaStore } from './validate/schemas';
import { clusterScopes, readTree } from './validate/tree';
import { ManifestValidator, ValidationIssue } from './validate/validator';

export { EXIT } from './commands/io';

const HELP = `gpu-cluster-manifests: render GPU Kubernetes clusters from one typed description.

Usage:
  npm run synth [-- --config FILE ... --out DIR]   render descriptions into manifests
  npm run validate -- DIR|FILE ...                   validate rendered manifests
  npm run check -- DIR                               cross-object rules over a rendered tree
  npm run diff [-- --allow-delete]                   what a fresh render would change in dist/
  npm run schema                                     write the description's JSON Schema
  npm run preflight -- --config FILE (--snapshot FILE | --kubeconfig [PATH] [--context NAME])
                                                     compare the render with a cluster (read-only)
  npm run init -- (--snapshot FILE | --kubeconfig [PATH] [--context NAME]) [--name NAME --repo URL --path DIR] [--out FILE]
                                                     write a description from a cluster (read-only)

Commands:
  synth      Without --config: every description in src/clusters/ into dist/<cluster>/
             (the whole output folder is replaced). With --config FILE (repeatable): that
             description into DIR/<cluster>/ only. Renders in memory, validates every object
             against the upstream schemas, then swaps the output in atomically: on any error
             the previous output is left byte-identical. A render that would remove rendered
             objects (Argo CD prunes them) exits 1 and writes nothing, unless --allow-delete.
  validate   Strict schema validation of every object in the given folders or files
             (unknown fields are errors; duplicates are errors; deprecated versions warn).
  check      Cross-object rules over rendered trees (default: dist/), one cluster per folder:
             queue labels -> LocalQueues -> ClusterQueues -> flavors, resources covered,
             quotas and MPIJob ranks fit the GPUs, one nic-cluster-policy, one RDMA name,
             one default StorageClass, Application paths and sync waves, no privileged
             containers, no latest images, no Secret data. Every Application is rendered
             as Argo CD renders it, with helm and kustomize (charts and overlays from
             --upstream DIR, folders of the tree): what the installs create is checked
             too (AppProject, placement, CRDs before their CRs, released versions and
             images). Capacity comes from the description of the same name (--config
             FILE to name it). synth runs the rules that need no engine;
             --list-rules prints every rule id, its severity and what it asserts.
  diff       Renders into a temporary folder and prints, per object, what would be added,
             removed or changed (field paths) against dist/ (or --out DIR). Exits 1 when
             an object would be deleted, unless --allow-delete.

  preflight  Compares what synth would render for --config with the cluster's state, read from
             a snapshot (--snapshot FILE: kubectl get ... -o yaml output, see README) or live
             (--kubeconfig [PATH] [--context NAME] [--timeout SECONDS]; GET requests only):
             immutable fields, allocated node ports, quota counted twice, missing APIs, drift of
             the nodes from the description, Kueue configuration, objects Argo CD would take over
             or prune. Each finding names the fix. Exit 1 on blocking findings.
             --list-rules prints every rule id. --timeout bounds the whole live read (exec
             credential plugin, connect, TLS, every answer; default 30); limits: README.
  init       Writes a description from the cluster (same sources as preflight) to stdout or
             --out FILE (never overwritten); what cannot be observed or decided is marked
             TODO(init); a cluster without GPU workers is refused (exit 2).

  schema     Print the JSON Schema of the cluster description (--out FILE to write it,
             --readme FILE to regenerate its field reference section; npm run schema
             writes ${path.relative(process.cwd(), SCHEMA_FILE) || SCHEMA_FILE} and the README's).

Options:
  --config FILE     a cluster description (YAML or JSON); repeatable
  --out DIR         output root (default: dist/)
  --schemas DIR     CRD YAML files and core definitions to validate against; repeatable
                    (default: ../shared/crds). To validate against your own cluster:
                    kubectl get crd -o yaml > my-crds/crds.yaml, then
                    --schemas my-crds --schemas ../shared/crds/kubernetes
  --upstream DIR    check: the vendored upstream Helm charts and kustomize overlays the
                    Applications are rendered from with helm and kustomize (default:
                    ../shared/upstream-installs; see README for filling one with helm pull)
  --no-validate     synth without schema validation (not recommended)
  --format FORMAT   text (default) or json (machine-readable findings)
  --allow-delete    synth: remove rendered objects (a dropped tenant, folder or cluster) from the
                    output; without it synth refuses and writes nothing. diff: exit 0 on deletions
  --quiet           print errors only
  -h, --help        this help

Exit codes: 0 ok, 1 validation or check failed (diff: a deletion), 2 bad input (description, arguments, missing schemas).
`;

function formatIssue(i: ValidationIssue): string {
  const where = i.source ? `${i.source}: ` : '';
  return `${i.severity}: ${where}${i.object}${i.path ? ` ${i.path}` : ''}: ${i.message}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function summary(r: SynthResult, io: Io): void {
  for (const c of r.clusters) {
    const total = c.folders.reduce((s, f) => s + f.objects.length, 0);
    io.out(`${c.name}: ${total} objects in ${c.folders.length} folders`);
    for (const f of c.folders) {
      const kinds = new Map<string, number>();
      for (const o of f.objects) kinds.set(o.kind, (kinds.get(o.kind) ?? 0) + 1);
      const list = [...kinds.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`).join(', ');
      io.out(`  ${f.folder.padEnd(18)} ${String(f.objects.length).padStart(4)}  ${list}`);
    }
  }
  const t = r.timings;
  const where = r.written.map((w) => path.relative(process.cwd(), w) || '.').join(', ');
  const what = r.changed.length > 0 ? `wrote ${r.files} files to ${where}` : `${where} already up to date (${r.files} files, nothing rewritten)`;
  io.out(`${what} in ${seconds(t.total)} `
    + `(load ${seconds(t.load)}, render ${seconds(t.render)}, validate ${seconds(t.validate)}, write ${seconds(t.write)})`);
}

export function runSynth(args: string[], io: Io = consoleIo): number {
  const { values } = parseArgs({
    args,
    options: { ...RENDER_OPTIONS, 'quiet': { type: 'boolean' }, 'allow-delete': { type: 'boolean' } },
    allowPositionals: false,
  });
  if (values.help) {
    io.out(HELP);
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  const { configs, schemas } = renderInputs(values);
  const out = values.out ?? DEFAULT_OUT;
  const result = synth({ configs, clustersDir: CLUSTERS_DIR, out, schemas, notify: io.err, allowDelete: values['allow-delete'] });
  for (const w of result.warnings) io.err(formatIssue(w));
  for (const f of result.findings) io.err(formatFinding(f));
  if (result.deleted.length > 0) {
    for (const l of deletionLines(result.deleted)) io.err(l);
    io.err(`note: ${result.deleted.length} rendered object(s) removed from ${path.relative(process.cwd(), out) || '.'} (--allow-delete); `
      + 'Argo CD prunes them when it syncs, Namespaces and volume claims only once someone confirms (Prune=confirm)');
  }
  if (format === 'json') io.out(JSON.stringify({ clusters: result.clusters.map((c) => c.name), files: result.files, timings: result.timings, warnings: result.warnings, findings: result.findings, deleted: result.deleted }));
  else if (!values.quiet) summary(result, io);
  return EXIT.ok;
}

export function runValidate(args: string[], io: Io = consoleIo): number {
  const { values, positionals } = parseArgs({
    args,
    options: {
      schemas: { type: 'string', multiple: true },
      format: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    io.out(HELP);
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  if (positionals.length === 0) throw new InputError('validate: name the rendered folders or files to validate (e.g. dist/instant-cluster)');
  // A folder an interrupted synth left half-swapped is completed first.
  for (const p of positionals) recoverAround(p, { command: 'validate', notify: io.err });
  for (const p of positionals) if (!existsSync(p)) throw new InputError(`validate: ${p}: no such file or folder`);
  const t0 = performance.now();
  const validator = new ManifestValidator(SchemaStore.open(schemaDirs(values.schemas)));
  // Each cluster is its own API server: an object may appear once per cluster folder.
  const scopes = positionals.flatMap(clusterScopes).map(readTree);
  const inputs = scopes.flat();
  if (inputs.length === 0) throw new InputError(`validate: no Kubernetes objects in ${positionals.join(', ')}`);
  const issues = scopes.flatMap((scope) => validator.validateAll(scope));
  const errors = issues.filter((i) => i.severity === 'error');
  if (format === 'json') {
    io.out(JSON.stringify({ objects: inputs.length, errors: errors.length, issues }, undefined, 2));
  } else {
    for (const i of issues) (i.severity === 'error' ? io.err : io.out)(formatIssue(i));
    if (!values.quiet) {
      io.out(`${errors.length === 0 ? 'ok' : 'FAILED'}: ${inputs.length} objects, ${errors.length} errors, `
        + `${issues.length - errors.length} warnings (${seconds(performance.now() - t0)})`);
    }
  }
  return errors.length === 0 ? EXIT.ok : EXIT.failed;
}

export function runSchema(args: string[], io: Io = consoleIo): number {
  const { values } = parseArgs({ args, options: { out: { type: 'string' }, readme: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    io.out(HELP);
    return EXIT.ok;
  }
  if (values.readme && !existsSync(values.readme)) throw new InputError(`--readme ${values.readme}: no such file`);
  const text = descriptionJsonSchemaText();
  if (values.out) writeFileSync(values.out, text);
  else io.out(text.trimEnd());
  if (values.readme) writeFileSync(values.readme, withDescriptionReference(readFileSync(values.readme, 'utf8')));
  return EXIT.ok;
}

/** A command returns its exit code; commands that read a live cluster return it asynchronously. */
type Command = (args: string[], io: Io) => number | Promise<number>;

const COMMANDS: Record<string, Command> = {
  synth: runSynth,
  validate: runValidate,
  schema: runSchema,
  check: (args, io) => runCheck(args, io, HELP),
  diff: (args, io) => runDiff(args, io, HELP),
  preflight: (args, io) => runPreflight(args, io, HELP),
  init: (args, io) => runInit(args, io, HELP),
};

/** Runs the CLI; returns the exit code (a promise for live cluster reads). Never throws or rejects. */
export function main(argv: string[], io: Io = consoleIo): number | Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    io.out(HELP);
    if (!command) return EXIT.badInput;
    return engineLines().then((lines) => {
      io.out('Engines (check renders every Application with them):');
      for (const l of lines) io.out(`  ${l}`);
      return EXIT.ok;
    }, (e: unknown) => failure(e, io));
  }
  const run = COMMANDS[command];
  if (!run) {
    io.err(`unknown command "${command}" (expected one of: ${Object.keys(COMMANDS).join(', ')}); see --help`);
    return EXIT.badInput;
  }
  try {
    const code = run(rest, io);
    return typeof code === 'number' ? code : code.catch((e: unknown) => failure(e, io));
  } catch (e) {
    return failure(e, io);
  }
}

/** The exit code (and the one-line message) of an error a command threw. */
function failure(e: unknown, io: Io): number {
  if (e instanceof InputError) {
    for (const l of inputErrorLines(e)) io.err(l);
    return EXIT.badInput;
  }
  if (e instanceof ValidationFailed) {
    for (const i of e.issues) io.err(formatIssue(i));
    io.err(`error: ${e.message}; nothing was written`);
    return EXIT.failed;
  }
  if (e instanceof CheckFailed) {
    for (const f of e.findings) io.err(formatFinding(f));
    io.err(`error: ${e.message}; nothing was written`);
    return EXIT.failed;
  }
  if (e instanceof DeletionRefused) {
    for (const l of deletionLines(e.deletions)) io.err(l);
    io.err(`error: ${e.message}`);
    return EXIT.failed;
  }
  if (e instanceof SchemaDirectoryMissing) {
    io.err(`error: ${e.message}`);
    return EXIT.badInput;
  }
  if (e instanceof WriteFailed) {
    io.err(`error: ${e.message}`);
    return EXIT.failed;
  }
  if (isFsError(e)) {
    io.err(`error: ${fsErrorText(e)}`);
    return EXIT.badInput;
  }
  if (e instanceof TypeError && (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
    io.err(`error: ${e.message}; see --help`);
    return EXIT.badInput;
  }
  io.err(`internal error: ${(e as Error).message}`);
  return EXIT.failed;
}

if (require.main === module) {
  void Promise.resolve(main(process.argv.slice(2))).then((code) => {
    process.exitCode = code;
  });
}
