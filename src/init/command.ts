import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { describeCluster, descriptionYaml } from './describe';
import { consoleIo, EXIT, Io } from '../commands/io';
import { CommandSpec, commandHelp, OPTIONS, OptionTable } from '../commands/options';
import { InputError } from '../errors';
import { DescriptionError, parseDescription } from '../model/load';
import { CLUSTER_SOURCE_OPTIONS, clusterSource, normalizeKubeconfigArg, readClusterState } from '../preflight/command';
import { ClusterState } from '../preflight/state';

const INIT_OPTIONS = {
  ...CLUSTER_SOURCE_OPTIONS,
  name: { type: 'string', value: 'NAME', help: 'the cluster\'s name (DNS-1123 label; names dist/<name>/)' },
  repo: { type: 'string', value: 'URL', help: 'the Git repository Argo CD reads the rendered manifests from (gitops.repoURL)' },
  path: { type: 'string', value: 'DIR', help: 'the folder of the rendered cluster in that repository (gitops.path, e.g. dist/<name>)' },
  out: { type: 'string', value: 'FILE', help: 'write the description to FILE (never overwritten) instead of printing it' },
  help: OPTIONS.help,
} as const satisfies OptionTable;

/** `init`: a description from a cluster. */
export const INIT: CommandSpec<typeof INIT_OPTIONS> = {
  name: 'init',
  usage: 'npm run init -- (--snapshot FILE | --kubeconfig [PATH] [--context NAME]) [--name NAME --repo URL --path DIR] [--out FILE]',
  summary: 'write a description from a cluster (a snapshot or live; read-only)',
  description: 'Writes a cluster description from what the cluster shows (the same sources as preflight): the service node\'s '
    + 'taints, the GPU workers\' count, GPUs, product, allocatable CPU and memory, taints, the RDMA resource, the default '
    + 'StorageClass, the pre-wired queue. What it cannot observe is marked TODO(init).',
  options: INIT_OPTIONS,
};

/**
 * `init (--snapshot FILE | --kubeconfig [PATH] [--context NAME]) [--name NAME --repo URL --path DIR] [--out FILE]`:
 * a cluster description from what the cluster shows. Read-only towards the cluster; --out never overwrites.
 */
export function runInit(argv: string[], io: Io = consoleIo): number | Promise<number> {
  const { values } = parseArgs({ args: normalizeKubeconfigArg(argv), options: INIT_OPTIONS });
  if (values.help) {
    io.out(commandHelp(INIT));
    return EXIT.ok;
  }
  const source = clusterSource(values, 'init');
  const write = (state: ClusterState): number => {
    const text = descriptionYaml(describeCluster(state, { name: values.name, repo: values.repo, path: values.path }), state.source);
    try {
      parseDescription(parse(text), 'init');
    } catch (e) {
      // Only the given options can make it invalid (the placeholders validate): name the option.
      if (e instanceof DescriptionError) {
        const option: Record<string, string> = { 'name': '--name', 'gitops.repoURL': '--repo', 'gitops.path': '--path' };
        const i = e.issues[0];
        throw new InputError(`${option[i.path] ?? i.path}: ${i.message}`);
      }
      throw e;
    }
    if (values.out) {
      try {
        writeFileSync(values.out, text, { flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new InputError(`--out ${values.out}: the file exists; init never overwrites (choose another name)`);
        throw e;
      }
      io.err(`wrote ${values.out}: check every TODO(init) line`);
    } else {
      io.out(text.trimEnd());
    }
    return EXIT.ok;
  };
  const state = readClusterState(source, []);
  return state instanceof ClusterState ? write(state) : state.then(write);
}
