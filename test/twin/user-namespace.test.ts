import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { userNamespaceRefusal } from '../../src/twin/kueue';

// a managed Kueue runs in a user and mount namespace of its own (kueue.ts visibilityNamespace): where the machine
// refuses one, the twin says why before it starts Kueue. Fake unshare commands: the machine's own may or may not allow it.
const dir = mkdtempSync(path.join(tmpdir(), 'userns-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fakeUnshare(name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('userNamespaceRefusal', () => {
  it('is undefined where a tmpfs could be mounted in a namespace of its own, and asks for exactly that', () => {
    const args = path.join(dir, 'args');
    expect(userNamespaceRefusal(dir, fakeUnshare('allows', `printf '%s\\n' "$@" > '${args}'`))).toBeUndefined();
    expect(readFileSync(args, 'utf8').split('\n').slice(0, 4)).toEqual(['--user', '--map-root-user', '--mount', 'sh']);
  });

  it('answers the first line of what refused it (Ubuntu\'s AppArmor restriction lets unshare run and the mount fail)', () => {
    const refuses = fakeUnshare('refuses', 'echo >&2; echo "mount: $4: permission denied." >&2; echo "second line" >&2; exit 32');
    expect(userNamespaceRefusal(dir, refuses)).toMatch(/^mount: .*: permission denied\.$/);
  });

  it('names a missing unshare, and an exit without a word', () => {
    expect(userNamespaceRefusal(dir, path.join(dir, 'no-such-unshare'))).toMatch(/ENOENT/);
    expect(userNamespaceRefusal(dir, fakeUnshare('silent', 'exit 1'))).toBe('exit 1');
  });
});
