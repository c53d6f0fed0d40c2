// @vitest-environment jsdom
// Mermaid's parser sanitizes labels with DOMPurify, which needs a DOM: jsdom provides one.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { FLEET_REPORT_FILE } from '../../src/report/fleet';
import { synth } from '../../src/synth/pipeline';
import { FLEET_FIXTURE } from '../helpers';

let page: string;

beforeAll(() => {
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'fleet-report-')), 'dist');
  synth({ clustersDir: FLEET_FIXTURE, out, schemas: false });
  page = readFileSync(path.join(out, 'fleet', FLEET_REPORT_FILE), 'utf8');
});

describe('the fleet page (dist/fleet/README.md) of a MultiKueue fleet', () => {
  it('draws the manager, its ClusterQueues, the AdmissionCheck and the workers in dispatch order, and Mermaid\'s own parser accepts it', async () => {
    const blocks = [...page.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks).toHaveLength(1);
    const { default: mermaid } = await import('mermaid');
    await expect(mermaid.parse(blocks[0])).resolves.toMatchObject({ diagramType: 'flowchart-v2' });
    expect(blocks[0]).toMatch(/ac_multikueue -->\|"1"\| worker_lab_a\n(.*\n)*\s+ac_multikueue -->\|"2"\| worker_lab_b/);
    expect(blocks[0]).toContain('cq_research["ClusterQueue research<br/>56 GPUs nominal"]');
  });

  it('tells the quotas per ClusterQueue and worker, the dispatcher, and how to register each worker', () => {
    expect(page).toMatch(/^\| `research` \| `research\/research` \| `multikueue` \| 1\. lab-a \(8\), 2\. lab-b \(48\) \| 56 \|/m);
    expect(page).toContain('Dispatcher `kueue.x-k8s.io/multikueue-dispatcher-incremental`');
    expect(page).toMatch(/### lab-a: Secret `kueue-system\/multikueue-lab-a` on hub/);
    expect(page).toMatch(/### lab-b: ClusterProfile `kueue-system\/lab-b` on hub/);
  });
});
