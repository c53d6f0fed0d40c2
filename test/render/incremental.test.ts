import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { DeletionRefused } from '../../src/render/deletions';
import { ReusedCluster, synth, SynthResult } from '../../src/synth/pipeline';
import { FIXTURE_CLUSTERS, FLEET_FIXTURE, HAS_SCHEMAS, readTreeFiles, REFERENCE_FILE, validator } from '../helpers';

// An incremental render of a fleet (SynthOptions.reuse, what the launcher's up-to-date record hands synth when only
// some descriptions changed): the clusters of the unchanged descriptions are kept as they are on disk, the others
// rendered, validated, checked and swapped in with the fleet folder. Its output is a full render's, byte for byte.

/** A clusters folder of the two fixtures and two more copies of the reference description, under other names. */
function fleetFolder(): string {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'incremental-')), 'clusters');
  cpSync(FIXTURE_CLUSTERS, dir, { recursive: true });
  for (const name of ['lab-a', 'lab-b']) {
    const d = parse(readFileSync(REFERENCE_FILE, 'utf8'));
    d.name = name;
    d.gitops.path = `dist/${name}`;
    writeFileSync(path.join(dir, `${name}.yaml`), stringify(d));
  }
  return dir;
}

/** What a record keeps of a run: every member but those of `changed` files, as plain data (JSON, as on disk). */
function reuseOf(result: SynthResult, changed: readonly string[]): Map<string, ReusedCluster> {
  const members = JSON.parse(JSON.stringify(result.members)) as (ReusedCluster & { config: string })[];
  return new Map(members.filter((m) => !changed.includes(m.config)).map(({ config, ...cluster }) => [config, cluster]));
}

function edit(file: string, change: (d: Record<string, any>) => void): void {
  const d = parse(readFileSync(file, 'utf8'));
  change(d);
  writeFileSync(file, stringify(d));
}

/** The parts of a result that do not depend on how much was rendered. */
function outcomeOf(r: SynthResult) {
  return { clusters: r.clusters, fleet: r.fleet, files: r.files, warnings: r.warnings, findings: r.findings, members: r.members, deleted: r.deleted };
}

const opts = (clustersDir: string, out: string) => ({ clustersDir, out, schemas: HAS_SCHEMAS ? [DEFAULT_SCHEMAS] : (false as const) });
const v = () => (HAS_SCHEMAS ? validator() : undefined);

describe('an incremental render of a fleet', () => {
  it('renders the changed descriptions only, and writes what a full render writes', () => {
    const clusters = fleetFolder();
    const root = path.dirname(clusters);
    const out = path.join(root, 'dist');
    const first = synth(opts(clusters, out), v());
    expect(first.members?.map((m) => m.summary.name)).toEqual(['instant-cluster', 'lab-a', 'lab-b', 'training-cluster']);

    // a tenant's quota in one cluster, and another cluster's revision (its fleet element)
    const labA = path.join(clusters, 'lab-a.yaml');
    const training = path.join(clusters, 'training-cluster.yaml');
    edit(labA, (d) => {
      d.tenants[0].gpus -= 1;
    });
    edit(training, (d) => {
      d.gitops.targetRevision = 'release-2';
    });
    const before = readTreeFiles(out);
    const incremental = synth({ ...opts(clusters, out), reuse: reuseOf(first, [labA, training]) }, v());
    expect(incremental.rendered).toEqual(['lab-a', 'training-cluster']);
    expect(incremental.changed).toEqual(['lab-a', 'training-cluster', 'fleet']);

    const full = synth(opts(clusters, path.join(root, 'full')), v());
    expect(full.rendered).toHaveLength(4);
    expect(outcomeOf(incremental)).toEqual(outcomeOf(full));
    const written = readTreeFiles(out);
    expect([...written]).toEqual([...readTreeFiles(path.join(root, 'full'))]);
    // the kept clusters' files are as they were
    for (const [f, text] of before) if (f.startsWith('instant-cluster/') || f.startsWith('lab-b/')) expect(written.get(f), f).toBe(text);
    expect(written.get('fleet/applicationset.argocd.fleet.yaml')).toContain('release-2');
  });

  it('renders every member of a MultiKueue fleet again when one changed: the manager\'s quotas are its workers\'', () => {
    const clusters = path.join(mkdtempSync(path.join(tmpdir(), 'incremental-fleet-')), 'clusters');
    cpSync(FLEET_FIXTURE, clusters, { recursive: true });
    const root = path.dirname(clusters);
    const out = path.join(root, 'dist');
    const first = synth({ clustersDir: clusters, out, schemas: false });
    const labA = path.join(clusters, 'lab-a.yaml');
    edit(labA, (d) => {
      d.tenants[0].gpus -= 1;
    });
    const incremental = synth({ clustersDir: clusters, out, schemas: false, reuse: reuseOf(first, [labA]) });
    expect(incremental.rendered).toEqual(['hub', 'lab-a', 'lab-b']);
    synth({ clustersDir: clusters, out: path.join(root, 'full'), schemas: false });
    expect([...readTreeFiles(out)]).toEqual([...readTreeFiles(path.join(root, 'full'))]);
  });

  it('keeps the deletion guard: a changed description that drops objects writes nothing without allowDelete', () => {
    const clusters = fleetFolder();
    const out = path.join(path.dirname(clusters), 'dist');
    const first = synth(opts(clusters, out), v());
    const labB = path.join(clusters, 'lab-b.yaml');
    edit(labB, (d) => {
      d.tenants = d.tenants.slice(0, 1);
    });
    const before = readTreeFiles(out);
    const refused = (() => {
      try {
        synth({ ...opts(clusters, out), reuse: reuseOf(first, [labB]) }, v());
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(refused).toBeInstanceOf(DeletionRefused);
    expect((refused as DeletionRefused).deletions.every((d) => d.file.startsWith('lab-b/'))).toBe(true);
    expect([...readTreeFiles(out)]).toEqual([...before]);

    const allowed = synth({ ...opts(clusters, out), reuse: reuseOf(first, [labB]), allowDelete: true }, v());
    expect(allowed.rendered).toEqual(['lab-b']);
    expect(allowed.deleted.length).toBeGreaterThan(0);
    const full = path.join(path.dirname(clusters), 'full');
    synth(opts(clusters, full), v());
    expect([...readTreeFiles(out)]).toEqual([...readTreeFiles(full)]);
  });

  it('refuses a changed description that takes a kept cluster\'s name, as a full render does', () => {
    // the names are compared before anything is rendered: no validation needed
    const clusters = fleetFolder();
    const out = path.join(path.dirname(clusters), 'dist');
    const first = synth({ clustersDir: clusters, out, schemas: false });
    const labB = path.join(clusters, 'lab-b.yaml');
    edit(labB, (d) => {
      d.name = 'lab-a';
    });
    const message = (run: () => unknown) => {
      try {
        run();
      } catch (e) {
        return [(e as Error).message, (e as { details?: string[] }).details];
      }
      return undefined;
    };
    const incremental = message(() => synth({ clustersDir: clusters, out, schemas: false, reuse: reuseOf(first, [labB]) }));
    expect(incremental?.[1]).toEqual([expect.stringMatching(/lab-b\.yaml: name: cluster "lab-a" is also described in .*lab-a\.yaml$/)]);
    expect(incremental).toEqual(message(() => synth({ clustersDir: clusters, out: path.join(path.dirname(clusters), 'full'), schemas: false })));
  });
});
