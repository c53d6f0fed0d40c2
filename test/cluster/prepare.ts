// The test task's first step (projenrc/test.cjs runs it with ts-node before vitest): the control plane of the
// cluster tests, from the cache or built, with a line while it builds. Exit 1 with one line when it cannot be had.
import { ControlPlaneBuildError, controlPlaneBinary } from './binary';

controlPlaneBinary({ progress: (l) => process.stderr.write(`${l}\n`) }).then(
  (b) => {
    if (b.built) process.stderr.write(`control plane: ${b.path}\n`);
  },
  (e: unknown) => {
    const message = e instanceof ControlPlaneBuildError ? e.message : String((e as Error)?.stack ?? e);
    process.stderr.write(`cannot prepare the cluster tests: ${message}\n`);
    process.exitCode = 1;
  },
);
