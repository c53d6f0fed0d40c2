import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAULT_ENV } from '../../src/fault';
import { scratchFolder } from '../../src/files';
import { BIN, REFERENCE_FILE, ROOT, TRAINING_FILE } from '../helpers';
import { kubeconfigFor } from '../preflight/api-server';

/*
 * The scratch folders of verify --config and upgrade-plan --from-toolkit (issue 52, hostile input round five, 12): a
 * run killed with SIGKILL cannot remove its own, so the next run of either removes those whose process is gone, and
 * nothing else (files.ts scratchFolder). Each command is killed by itself right after it made its folder
 * (GPU_CLUSTER_MANIFESTS_FAULT=scratch:1), in a temporary folder (TMPDIR) of the test's own.
 */

let dir: string;
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'scratch-folders-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A pid no process has: one of a child that has ended. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('scratchFolder removes what processes that are gone left, and only that', () => {
  it('a folder of a dead process with its owner file goes; every other entry stays', () => {
    const tmp = mkdtempSync(path.join(dir, 'unit-'));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const dead = deadPid();
      const left = path.join(tmp, `gcm-test-${dead}-AbC123`);
      mkdirSync(left);
      writeFileSync(path.join(left, '.gpu-cluster-manifests-scratch'), `${dead}\n`);
      writeFileSync(path.join(left, 'render.yaml'), 'x');
      // not made here: no owner file, another pid in it, a file of the name, a link of the name, another prefix, a live process
      const kept = [`gcm-test-${dead}-NoOwnr`, `gcm-test-${dead}-Other1`, `gcm-test-${dead}-AFile1`, `gcm-test-${dead}-ALink1`, `other-${dead}-AbC123`, `gcm-test-${process.pid}-Alive1`];
      mkdirSync(path.join(tmp, kept[0]));
      mkdirSync(path.join(tmp, kept[1]));
      writeFileSync(path.join(tmp, kept[1], '.gpu-cluster-manifests-scratch'), '1\n');
      writeFileSync(path.join(tmp, kept[2]), 'a file of the user');
      symlinkSync(tmp, path.join(tmp, kept[3]));
      mkdirSync(path.join(tmp, kept[4]));
      writeFileSync(path.join(tmp, kept[4], '.gpu-cluster-manifests-scratch'), `${dead}\n`);
      mkdirSync(path.join(tmp, kept[5]));
      writeFileSync(path.join(tmp, kept[5], '.gpu-cluster-manifests-scratch'), `${process.pid}\n`);
      const made = scratchFolder('gcm-test');
      expect(path.dirname(made)).toBe(tmp);
      expect(path.basename(made)).toMatch(new RegExp(`^gcm-test-${process.pid}-[A-Za-z0-9]{6}$`));
      expect(readdirSync(tmp).sort()).toEqual([...kept, path.basename(made)].sort());
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });
});

/**
 * The compiled CLI in a child with TMPDIR of its own and `env`, killed by itself at the fault (or by the test after
 * 120 s); not waited on synchronously: this process serves the API server it asks.
 */
function child(tmp: string, args: string[], env: Record<string, string> = {}): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  const c = spawn(process.execPath, [BIN, ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false', TMPDIR: tmp, ...env } });
  let stderr = '';
  c.stderr!.on('data', (d) => { stderr += String(d); });
  const timer = setTimeout(() => c.kill('SIGTERM'), 120_000);
  return new Promise((resolve) => c.on('close', (_, signal) => {
    clearTimeout(timer);
    resolve({ signal, stderr });
  }));
}

describe('kill -9 of a run leaves its scratch folder; the next run removes it', () => {
  it('verify --config', async () => {
    const { createServer } = await import('node:http');
    // a server that answers /version as an API server does: the run goes on to render into its scratch folder
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ major: '1', minor: '31', gitVersion: 'v1.31.4' })));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const kubeconfig = path.join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(`http://127.0.0.1:${(server.address() as { port: number }).port}`));
      const tmp = mkdtempSync(path.join(dir, 'verify-'));
      const args = ['verify', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig];
      const first = await child(tmp, args, { [FAULT_ENV]: 'scratch:1' });
      expect(first.signal, first.stderr).toBe('SIGKILL');
      const [left] = readdirSync(tmp);
      expect(left).toMatch(/^gpu-cluster-manifests-verify-\d+-/);
      const second = await child(tmp, args, { [FAULT_ENV]: 'scratch:1' });
      expect(second.signal, second.stderr).toBe('SIGKILL');
      const now = readdirSync(tmp);
      expect(now).toHaveLength(1);
      expect(now[0]).not.toBe(left);
    } finally {
      server.close();
    }
  }, 240_000);

  it('upgrade-plan --from-toolkit', async () => {
    const tmp = mkdtempSync(path.join(dir, 'upgrade-plan-'));
    // this package, built, as the other toolkit: its versions module prints its pins before the scratch folder is made
    const args = ['upgrade-plan', '--config', TRAINING_FILE, '--from-toolkit', ROOT];
    const first = await child(tmp, args, { [FAULT_ENV]: 'scratch:1' });
    expect(first.signal, first.stderr).toBe('SIGKILL');
    const [left] = readdirSync(tmp);
    expect(left).toMatch(/^gpu-cluster-manifests-upgrade-plan-\d+-/);
    const second = await child(tmp, args, { [FAULT_ENV]: 'scratch:1' });
    expect(second.signal, second.stderr).toBe('SIGKILL');
    const now = readdirSync(tmp);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(left);
  }, 240_000);
});
