// The test task's first step (projenrc/test.cjs runs it with ts-node before vitest): the binaries of the cluster
// tests from the cache or built, one after the other (each build takes both cores), with a line while each builds.
// The control plane first: exit 1 with one line when it cannot be had (every cluster test fails on it). Then Kueue
// and the Argo CD twin, only with a control plane to run them against: when one cannot be had, one line, and the run
// goes on (only the tests that run it fail, on the same line). The builds' whole time is said first.
import { buildsNeeded, buildTimeLine, ControlPlaneBuildError, controlPlaneBinary, kueueBinary, twinBinary } from '../../src/twin/binary';

const say = (l: string) => process.stderr.write(`${l}\n`);

/** One line of a build's error: its first line and, for a failed go build, the first line go said. */
function oneLine(e: unknown): string {
  if (!(e instanceof ControlPlaneBuildError)) return String((e as Error)?.stack ?? e);
  const [head, ...rest] = e.message.split('\n');
  const first = rest.map((l) => l.trim()).find((l) => l !== '' && !l.startsWith('#'));
  return first ? `${head} ${first}` : head;
}

async function prepare(): Promise<void> {
  // the whole time of the builds still needed, said once before the first (as rehearse says it)
  const total = buildTimeLine(buildsNeeded());
  if (total) say(total);
  try {
    const plane = await controlPlaneBinary({ progress: say });
    if (plane.built) say(`control plane: ${plane.path}`);
  } catch (e) {
    say(`cannot prepare the cluster tests: ${e instanceof ControlPlaneBuildError ? e.message : String((e as Error)?.stack ?? e)}`);
    process.exitCode = 1;
    return;
  }
  try {
    const kueue = await kueueBinary({ progress: say });
    if (kueue.built) say(`kueue: ${kueue.path}`);
  } catch (e) {
    say(`cannot prepare the Kueue tests (test/cluster/kueue.test.ts fails on it): ${oneLine(e)}`);
  }
  try {
    const twin = await twinBinary({ progress: say });
    if (twin.built) say(`twin: ${twin.path}`);
  } catch (e) {
    say(`cannot prepare the Argo CD twin (test/cluster/argocd-twin.test.ts fails on it): ${oneLine(e)}`);
  }
}

void prepare();
