import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CACHE_ENV } from '../../src/cache/cache-dir';
import { EXIT } from '../../src/cli';
import { runMain } from '../helpers';
import { REFERENCE_FILE } from '../paths';
import { kubeconfigFor } from '../preflight/api-server';

/*
 * verify's bad input: each exits 2 with one line naming the file (and the field), before anything is sent. What
 * it does against a live API server is test/cluster/live-commands.test.ts.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'verify-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, content);
  return f;
}

const verify = (...args: string[]) => runMain('verify', ...args);

describe('verify: bad input exits 2 with one line', () => {
  const good = () => file('kubeconfig', kubeconfigFor('http://127.0.0.1:9'));
  const cases: [string, () => string[], RegExp][] = [
    ['no live cluster named', () => [dir], /^error: verify: name the live cluster: --kubeconfig/],
    ['a kubeconfig that does not exist', () => [dir, '--kubeconfig', path.join(dir, 'nowhere.yaml')], /nowhere\.yaml/],
    [
      'a kubeconfig whose certificate authority is no file (its field named)',
      () => [dir, '--kubeconfig', file('zero-ca', kubeconfigFor('https://127.0.0.1:9').replace('    insecure-skip-tls-verify: true\n', '    certificate-authority: /dev/zero\n'))],
      /zero-ca: cluster\.certificate-authority \/dev\/zero: not a regular file/,
    ],
    [
      'a kubeconfig whose context names no cluster of it',
      () => [dir, '--kubeconfig', file('no-context', kubeconfigFor('http://127.0.0.1:9').replace('current-context: test', 'current-context: gone'))],
      /no-context: the current-context "gone" is not among its contexts/,
    ],
    ['a --context the kubeconfig lacks', () => [dir, '--kubeconfig', good(), '--context', 'elsewhere'], /--context elsewhere: no such context in .*kubeconfig/],
    ['a timeout out of range', () => [dir, '--kubeconfig', good(), '--timeout', '6000'], /--timeout 6000: expected seconds from 0 to 600/],
    [
      'a description with a bad field (file, line and field path)',
      () => ['--config', file('lab.yaml', readFileSync(REFERENCE_FILE, 'utf8').replace('gpusPerNode: 8', 'gpusPerNode: eight')), '--kubeconfig', good()],
      /lab\.yaml:\d+:\d+ nodes\.gpuWorkers\.gpusPerNode: expected a positive integer, got "eight"/,
    ],
    ['a folder that holds no render', () => [dir, '--kubeconfig', good()], /^error: verify: no rendered objects in /],
    ['a folder that does not exist', () => [path.join(dir, 'gone'), '--kubeconfig', good()], /^error: verify: .*gone: no such folder/],
    ['two rendered clusters at once', () => [dir, dir, '--kubeconfig', good()], /^error: verify: one rendered cluster at a time/],
  ];
  it.each(cases)('%s', async (_name, args, says) => {
    const r = await verify(...args());
    expect(r.code, r.err.join('\n')).toBe(EXIT.badInput);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(says);
    expect(r.out).toEqual([]);
  });
});

describe('verify: the server is asked before anything is rendered', () => {
  it('a server that does not answer: one line naming it and the kubeconfig, exit 2, and no render made (the cache folder stays empty)', async () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'verify-cache-'));
    const saved = process.env[CACHE_ENV];
    process.env[CACHE_ENV] = cache;
    try {
      const kubeconfig = file('refused', kubeconfigFor('http://127.0.0.1:9'));
      const r = await verify('--config', REFERENCE_FILE, '--kubeconfig', kubeconfig);
      expect(r.code).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(/^error: http:\/\/127\.0\.0\.1:9: connection refused: .*--kubeconfig .*refused/)]);
      expect(readdirSync(cache)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env[CACHE_ENV];
      else process.env[CACHE_ENV] = saved;
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
