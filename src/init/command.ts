import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { describeCluster, descriptionYaml } from './describe';
import { consoleIo, EXIT, Io } from '../commands/io';
import { InputError } from '../errors';
import { DescriptionError, parseDescription } from '../model/load';
import { CLUSTER_SOURCE_OPTIONS, clusterSource, normalizeKubeconfigArg, readClusterState } from '../preflight/command';
import { ClusterState } from '../preflight/state';

/**
 * `init (--snapshot FILE | --kubeconfig [PATH] [--context NAME]) [--name NAME --repo URL --path DIR] [--out FILE]`:
 * a cluster description from what the cluster shows. Read-only towards the cluster; --out never overwrites.
 */
export function runInit(argv: string[], io: Io = consoleIo, help = ''): number | Promise<number> {
  const { values } = parseArgs({
    args: normalizeKubeconfigArg(argv),
    options: {
      ...CLUSTER_SOURCE_OPTIONS,
      name: { type: 'string' },
      repo: { type: 'string' },
      path: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.out(help);
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
