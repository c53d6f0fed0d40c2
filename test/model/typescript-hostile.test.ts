import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors';
import { loadModels } from '../../src/model/load-models';
import { processGone } from '../engines/fake-engines';
import { ROOT } from '../helpers';

/*
 * A TypeScript description is trusted code (docs/guarantees.md says so), but what it does by accident never outlives
 * the command nor forges its answer: the processes it starts are ended with it (a detached child, one holding
 * its output), anything but its value on the sandbox's answer channel is exit 2 naming the file, and a value
 * too large says so. In-process: the sandbox is a process of its own anyway.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'ts-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const TYPED = readFileSync(path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts'), 'utf8');

/** The typed example with `prelude` after its import (and `edit` applied); returns the file. */
function description(name: string, prelude: string, edit: (s: string) => string = (s) => s): string {
  const file = path.join(dir, `${name}.ts`);
  writeFileSync(file, edit(TYPED.replace(/(import \{ defineCluster \} from 'gpu-cluster-manifests';\n)/, `$1${prelude}\n`)));
  return file;
}

/** The problem of a description that does not load: its one line (naming the file). */
function refused(file: string): string {
  try {
    loadModels([file]);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).details.join('\n');
  }
  throw new Error(`${file} loaded`);
}


const LINUX = process.platform === 'linux';

describe.skipIf(!LINUX)('what a TypeScript description starts ends with it', () => {
  it('a detached child (its own session) is ended once the value is exported', () => {
    const pidFile = path.join(dir, 'detached.pid');
    const file = description('detached', `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
child.unref();`);
    expect(loadModels([file]).map((m) => m.name)).toEqual(['typed-cluster']);
    expect(processGone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('a child holding the sandbox\'s output does not keep the load waiting (it would until the time limit)', () => {
    const pidFile = path.join(dir, 'holder.pid');
    const file = description('holder', `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const child = spawn('sleep', ['600'], { stdio: 'inherit' });
writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
child.unref();`, (s) => s.replace("'typed-cluster'", "'holder-cluster'").replace('dist/typed-cluster', 'dist/holder-cluster'));
    process.env.GPU_CLUSTER_MANIFESTS_TS_TIMEOUT = '120';
    try {
      expect(loadModels([file]).map((m) => m.name)).toEqual(['holder-cluster']);
    } finally {
      delete process.env.GPU_CLUSTER_MANIFESTS_TS_TIMEOUT;
    }
    expect(processGone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });
});

describe('the sandbox\'s answer is the description\'s value and nothing else', () => {
  it('something written on the answer channel (file descriptor 3) is exit 2 naming the file', () => {
    const file = description('forged', `import { writeSync } from 'node:fs';
writeSync(3, 'V' + 'garbage');`);
    expect(refused(file)).toBe(`${file}: the description wrote something else than its value on the sandbox's answer channel (file descriptor 3): a description only exports its value`);
  });

  it('a value over 16 MiB says so (it is no output printed)', () => {
    const file = description('huge', 'const big = \'x\'.repeat(17 * 1024 * 1024);', (s) => s.replace("  name: 'typed-cluster',", "  name: 'typed-cluster',\n  // @ts-expect-error a field of no description\n  extra: big,"));
    expect(refused(file)).toBe(`${file}: the description's exported value is larger than 16 MiB when serialised, far more than a cluster description needs`);
  });
});
