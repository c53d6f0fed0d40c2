import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { describeState } from '../../src/twin/applications';
import { twinBinary } from '../../src/twin/binary';
import { KubeClient } from '../../src/twin/kube-client';
import { sleep } from '../../src/twin/poll';
import { startTwinCluster, TwinCluster, TwinClusterOptions } from '../../src/twin/twin-cluster';

/** A twin of a description with its first commit pushed and the README's bootstrap applied: what a twin test file starts from. */
export interface BootedTwin {
  readonly twin: TwinCluster;
  /** The bootstrap commit. */
  readonly head: string;
}

export interface BootTwinOptions extends TwinClusterOptions {
  /** Arguments for Argo CD's application controller (e.g. a shorter resync). @default none */
  readonly controllerArgs?: readonly string[];
}

/** When the file started and its CPU so far: the line stopTwin prints. */
const started = { at: Date.now(), cpu: process.cpuUsage() };

/**
 * The binary first (without Go, or when it does not build, every test of the file fails with that one line), then the
 * twin of `opts.description`, its bootstrap commit and the README's bootstrap. A twin whose bootstrap fails is stopped
 * before the error is thrown.
 */
export async function bootTwin(opts: BootTwinOptions): Promise<BootedTwin> {
  await twinBinary();
  const twin = await startTwinCluster(opts);
  try {
    const head = await twin.push(`${twin.name}: the bootstrap commit`);
    await twin.bootstrap({ controllerArgs: opts.controllerArgs });
    return { twin, head };
  } catch (e) {
    await twin.stop();
    throw e;
  }
}

/** Prints what the file cost (wall, CPU seconds of each twin process and of the test process, the load), then stops the twin. */
export async function stopTwin(twin: TwinCluster | undefined): Promise<void> {
  if (!twin) return;
  const self = process.cpuUsage(started.cpu);
  console.log(`${twin.name}: file wall ${((Date.now() - started.at) / 1000).toFixed(0)} s; CPU s ${JSON.stringify({ ...twin.cpuSeconds(), 'test process': (self.user + self.system) / 1e6 })}; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  await twin.stop();
}

/** Every Application's state as Argo CD reports it, one line each. */
export function describeApplications(twin: TwinCluster): string {
  return twin.watch.states().map(describeState).join('\n');
}

/** What the root reports of one of its Applications (status.resources[]: its sync status, and its health as the toolkit's Application check says). */
export async function rootSees(twin: TwinCluster, child: string): Promise<{ status?: string; health?: string; message?: string }> {
  const root = await twin.cp.client().get(`/apis/argoproj.io/v1alpha1/namespaces/${twin.model.description.gitops.namespace}/applications/${twin.name}`);
  const r = (((root?.status as Record<string, any> | undefined)?.resources ?? []) as Record<string, any>[]).find((x) => x.kind === 'Application' && x.name === child) ?? {};
  return { status: r.status, health: r.health?.status, message: r.health?.message };
}

/** Reads until `done` holds (answers how long it took), or fails saying `what` did not happen within `ms`, with every Application's state, the twin's logs and `more()`. */
export async function untilOnTwin(twin: TwinCluster, what: string, done: () => boolean | Promise<boolean>, ms: number, more: () => string = () => ''): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await done()) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s. The Applications:\n${describeApplications(twin)}\n${twin.twin.logs(5)}${more()}`);
    await sleep(1000);
  }
}

/**
 * The command lines dist/<cluster>/README.md prints for `command` (`argocd`, `kubectl`) in its shell blocks, comments
 * cut: from the section whose heading starts with `section` to the next of its level, or the whole README. What the
 * twin tests run as printed.
 */
export function printedCommands(twin: TwinCluster, command: string, section?: string): string[] {
  let lines = readFileSync(path.join(twin.clusterDir, 'README.md'), 'utf8').split('\n');
  if (section !== undefined) {
    // a heading is a line of #s outside the code blocks (a shell comment in one starts with # too)
    let fenced = false;
    const outside = lines.map((l) => (l.startsWith('```') ? (fenced = !fenced, false) : !fenced));
    const heading = (l: string, i: number) => (outside[i] ? /^(#+) (.*)$/.exec(l) : null);
    const start = lines.findIndex((l, i) => heading(l, i)?.[2].startsWith(section));
    if (start < 0) throw new Error(`dist/${twin.name}/README.md has no section "${section}"`);
    const level = heading(lines[start], start)![1].length;
    const end = lines.findIndex((l, i) => i > start && (heading(l, i)?.[1].length ?? Infinity) <= level);
    lines = lines.slice(start, end < 0 ? undefined : end);
  }
  const text = lines.join('\n');
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1].split('\n'))
    .map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith(`${command} `));
}

/** Who the twin's API server says the token of a kubeconfig file is (a SelfSubjectReview sent with it). */
export async function userOfKubeconfig(twin: TwinCluster, file: string): Promise<string | undefined> {
  const token = (parse(readFileSync(file, 'utf8')) as { users: { user: { token: string } }[] }).users[0].user.token;
  const client = new KubeClient(twin.cp.server, readFileSync(twin.cp.caFile), token);
  try {
    const review = await client.call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } }) as { status?: { userInfo?: { username?: string } } };
    return review.status?.userInfo?.username;
  } finally {
    client.close();
  }
}
