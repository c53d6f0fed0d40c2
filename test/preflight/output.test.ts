import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedSnapshot } from './snapshots';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { REFERENCE_FILE } from '../helpers';

/* What preflight prints stays readable whatever the cluster holds: bounded lines, no raw control characters. */

let dir: string;
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'preflight-output-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const snapshot = (name: string, change: (objects: any[]) => void) => changedSnapshot(dir, name, change);

function preflight(file: string, ...more: string[]) {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  const code = main(['preflight', '--config', REFERENCE_FILE, '--snapshot', file, ...more], io) as number;
  return { code, lines };
}

describe('preflight findings', () => {
  it('on 5,000 GPU workers: node lists are summarised, every line stays short', () => {
    const file = snapshot('large', (objects) => {
      const node = objects.find((o) => o.kind === 'Node' && o.status.allocatable['nvidia.com/gpu']);
      for (let i = 0; i < 5_000; i++) objects.push({ ...structuredClone(node), metadata: { ...structuredClone(node.metadata), name: `gpu-${String(i).padStart(5, '0')}` } });
    });
    const r = preflight(file);
    expect(r.code).toBe(EXIT.failed);
    expect(r.lines.join('\n')).toContain('error [drift-node-count] Nodes gpu-00000, gpu-00001, gpu-00002, gpu-00003, gpu-00004 and 4998 more: the cluster has 5003 GPU worker(s)');
    expect(r.lines.join('\n')).toContain('fix: 5003 GPU workers are more than one description takes (nodes.gpuWorkers.count)');
    expect(Math.max(...r.lines.map((l) => l.length))).toBeLessThan(500);
  }, 120_000);

  it('a NUL and a line break in a label are escaped in the finding and its fix, in text and JSON', () => {
    const file = snapshot('nul', (objects) => objects.filter((o) => o.kind === 'Node' && o.status.allocatable['nvidia.com/gpu']).forEach((n) => {
      n.metadata.labels['nvidia.com/gpu.product'] = 'NVIDIA\u0000H100\nerror [forged] finding';
    }));
    const text = preflight(file);
    const product = text.lines.find((l) => l.includes('[drift-gpu-product]'))!;
    expect(product).toContain('nvidia.com/gpu.product is NVIDIA\\u0000H100\\nerror [forged] finding and the description says');
    expect(text.lines.join('\n')).not.toMatch(/[\u0000-\u0008\u000b-\u001f]|^error \[forged\]/m);
    const json = preflight(file, '--format', 'json');
    expect(json.lines.join('\n')).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/);
    expect(JSON.parse(json.lines.join('\n')).findings.find((f: { rule: string }) => f.rule === 'drift-gpu-product').message).toContain('NVIDIA\u0000H100');
  });
});
