import { existsSync, lstatSync, readlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { describeCluster, descriptionYaml, PLACEHOLDERS } from './describe';
import { consoleIo, EXIT, Io } from '../commands/io';
import { commandHelp } from '../commands/options';
import { progressOf } from '../commands/progress';
import { INIT } from '../commands/specs';
import { InputError, printable } from '../errors';
import { pathProblem } from '../files';
import { DescriptionError, parseDescription } from '../model/load';
import { MAX_NODES, withoutUrlCredentials } from '../model/schema-types';
import { clusterSource, normalizeKubeconfigArg, readClusterState } from '../preflight/command';
import { ClusterState } from '../preflight/state';
import { readGitRepo, repositoryKey } from '../project/git';
import { Project, projectOf } from '../project/project-file';


/**
 * Refuses an --out init cannot write as a new file: empty, an unusable path, or an existing entry,
 * named for what it is (a file, a folder, a symbolic link, and where that link points).
 */
function checkOut(out: string): void {
  if (out === '') throw new InputError('--out "": empty path; name the file to write, or --out - to print the description');
  const problem = pathProblem(out);
  if (problem) throw new InputError(`--out ${out}: the path ${problem}`);
  const st = lstatSync(out, { throwIfNoEntry: false });
  if (!st) return;
  const choose = 'init never overwrites and never writes through a link: choose another name';
  if (st.isSymbolicLink()) {
    const target = readlinkSync(out);
    const dangling = !existsSync(out);
    throw new InputError(`--out ${out}: a symbolic link to ${target}${dangling ? ', which does not exist' : ''}; ${choose}`);
  }
  throw new InputError(`--out ${out}: ${st.isDirectory() ? 'a folder' : 'the file exists'}; ${choose}`);
}

/** gitops.path of a new cluster of the project: `<out>/<name>`, relative to the project folder (a Git path: `/`). */
function projectGitopsPath(project: Project, name: string): string {
  return [...path.relative(project.root, project.out).split(path.sep), name].join('/');
}

/**
 * `init (--snapshot FILE | --kubeconfig [PATH] [--context NAME]) [--name NAME --repo URL --path DIR] [--out FILE|-]`:
 * a cluster description from what the cluster shows, written into the project's descriptions folder
 * (or --out FILE; printed outside a project or with --out -). Read-only towards the cluster; never overwrites.
 * --repo defaults to the remote origin of the Git checkout the project (else the working folder) is in.
 */
export function runInit(argv: string[], io: Io = consoleIo): number | Promise<number> {
  const { values } = parseArgs({ args: normalizeKubeconfigArg(argv), options: INIT.options });
  if (values.help) {
    io.out(commandHelp(INIT));
    return EXIT.ok;
  }
  const source = clusterSource(values, 'init');
  const project = values.out === undefined ? projectOf() : undefined;
  const name = values.name ?? PLACEHOLDERS.name;
  const out = values.out === '-' ? undefined : values.out ?? (project && path.join(project.clusters, `${name}.yaml`));
  // before reading the cluster: a live read is not wasted on an output that cannot be written
  if (out !== undefined) checkOut(out);
  const gitopsPath = values.path ?? (project && projectGitopsPath(project, name));
  // --repo defaults to the checkout's remote origin (read from its .git files; a local path is no server Argo CD reads)
  // (without credentials a clone URL may carry: Argo CD takes them from its repository Secret)
  const remote = values.repo === undefined ? readGitRepo(project?.root ?? process.cwd())?.origin : undefined;
  const origin = remote === undefined ? undefined : withoutUrlCredentials(remote);
  const repo = values.repo ?? (origin !== undefined && repositoryKey(origin) !== undefined ? origin : undefined);
  const write = (state: ClusterState): number => {
    const options = { name: values.name, repo, repoFromOrigin: values.repo === undefined, path: gitopsPath };
    let described;
    try {
      described = describeCluster(state, options);
    } catch (e) {
      // a combination the components refuse (as synth reports it): what the cluster shows, not a fault of init
      if (e instanceof InputError || !(e instanceof Error)) throw e;
      throw new InputError(`${state.source}: what the cluster shows does not fit a description: ${e.message.split('\n')[0]}`);
    }
    const text = descriptionYaml(described, state.source);
    try {
      parseDescription(parse(text), 'init');
    } catch (e) {
      if (e instanceof DescriptionError) {
        // the placeholders validate: either a given option or a value the cluster shows is wrong
        const option: Record<string, string> = { 'name': '--name', 'gitops.repoURL': '--repo', 'gitops.path': '--path' };
        const i = e.issues[0];
        if (option[i.path]) throw new InputError(`${option[i.path]}: ${i.message}`);
        throw new InputError(`${state.source}: what the cluster shows does not fit a description: ${i.path}: ${printable(i.message)}`);
      }
      throw e;
    }
    if (values.name === undefined && !values.quiet) {
      io.err(`init: no --name: the cluster is named ${name} (its name: line, dist/${name}/); pass --name NAME to choose another`);
    }
    if (out !== undefined) {
      try {
        writeFileSync(out, text, { flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') checkOut(out);
        throw e;
      }
      if (!values.quiet) io.err(`wrote ${values.out ?? path.relative(process.cwd(), out)}: check every TODO(init) line`);
    } else {
      io.out(text.trimEnd());
    }
    return EXIT.ok;
  };
  // a description describes at most MAX_NODES: a larger cluster is refused while it is read, before it is described
  const state = readClusterState(source, [], MAX_NODES);
  if (state instanceof ClusterState) return write(state);
  // a live read waits on the API server: on a terminal, a line says so
  const progress = progressOf(io.progress, 'init', undefined, values.quiet);
  progress?.activity('reading the cluster (GET requests only)');
  return state.finally(() => progress?.end()).then(write);
}
