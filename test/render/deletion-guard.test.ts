import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { EXIT, main } from '../../src/cli';
import { deletionLines, DeletionRefused } from '../../src/render/deletions';
import { synth as synthPipeline } from '../../src/synth/pipeline';
import { readTreeFiles, referenceInput } from '../helpers';

/*
 * The deletion guard covers everything an output holds that the render would not write again, as the README
 * promises: a file that is no YAML, a folder or a symbolic link of the user's, anything at the output root
 * that is no cluster folder, and an output folder that is itself a symbolic link. Without --allow-delete synth
 * lists each on stderr, exits 1 and writes nothing; with it, it removes them, listing them the same way.
 * In-process (the guard is the point), without schema validation.
 */

const work = mkdtempSync(path.join(tmpdir(), 'deletion-guard-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function capture() {
  const err: string[] = [];
  return { io: { out: () => undefined, err: (l: string) => { err.push(l); } }, err };
}

let name: string;
let reference: string;
let dropped: string;

beforeAll(() => {
  const d = referenceInput();
  // the tutorials' client files are synth's own files without objects: turned on, so the guard's handling of them is seen
  d.tutorials = { ...d.tutorials, skypilot: { ...d.tutorials?.skypilot, enabled: true } };
  name = d.name;
  reference = path.join(work, 'descriptions', `${name}.yaml`);
  mkdirSync(path.dirname(reference));
  writeFileSync(reference, stringify(d));
  d.tenants = d.tenants.filter((t: { name: string }) => t.name !== 'inference');
  dropped = path.join(work, 'dropped.yaml');
  writeFileSync(dropped, stringify(d));
});

/** The line of the dropped tenant's Namespace under the cluster folder `entry`: pruned once someone confirms (Prune=confirm). */
const inferenceNamespace = (entry: string) => expect.stringMatching(
  new RegExp(`^- ${entry}: Namespace inference \\(tenants/namespace\\.inference\\.yaml\\): Argo CD deletes it only once someone confirms \\(Prune=confirm\\)`),
);

/** synth of `configs` into `out` (no validation); its exit code and standard error. */
function synth(out: string, configs: readonly string[], ...flags: string[]): { code: number; err: string[] } {
  const c = capture();
  const args = ['synth', ...configs.flatMap((f) => ['--config', f]), '--out', out, '--no-validate', '--quiet', ...flags];
  return { code: main(args, c.io) as number, err: c.err };
}

/** The plain synth of a folder of descriptions into `out` (the whole output root). */
function synthAll(out: string, allowDelete = false): { code: number; err: string[] } {
  // the plain synth reads src/clusters/; a folder of our own goes through the library's option instead
  try {
    const r = synthPipeline({ clustersDir: path.dirname(reference), out, schemas: false, allowDelete });
    return { code: 0, err: deletionLines(r.deleted) };
  } catch (e) {
    if (!(e instanceof DeletionRefused)) throw e;
    return { code: 1, err: deletionLines(e.deletions) };
  }
}

/** A fresh output root with the reference cluster rendered into it. */
function rendered(label: string): string {
  const out = path.join(work, label);
  expect(synth(out, [reference]).code).toBe(EXIT.ok);
  return out;
}

describe('an output folder that is a symbolic link', () => {
  it('counts as removed (the write would replace the link), and what its target holds is compared: the dropped tenant is listed', () => {
    const real = rendered('link-target');
    const out = path.join(work, 'link-out');
    mkdirSync(out);
    symlinkSync(path.join(real, name), path.join(out, name));
    const before = readTreeFiles(real);
    const r = synth(out, [dropped]);
    expect(r.code).toBe(EXIT.failed);
    expect(r.err).toContain(`- ${name}: the symbolic link ${name} (to ${path.join(real, name)}), which the write replaces with a plain folder`);
    expect(r.err).toContainEqual(inferenceNamespace(name));
    expect(r.err.filter((l) => l.startsWith(`- ${name}: `)).length).toBeGreaterThan(10);
    expect(lstatSync(path.join(out, name)).isSymbolicLink()).toBe(true);
    expect(readTreeFiles(real)).toEqual(before);
    // asked: the link becomes a plain folder; the folder it pointed at is left as it was
    const allowed = synth(out, [dropped], '--allow-delete');
    expect(allowed.code).toBe(EXIT.ok);
    expect(lstatSync(path.join(out, name)).isDirectory()).toBe(true);
    expect(existsSync(path.join(out, name, 'tenants', 'namespace.inference.yaml'))).toBe(false);
    expect(readTreeFiles(real)).toEqual(before);
  });
});

describe('files, folders and links of the user\'s in a cluster folder', () => {
  it('are each listed and kept without --allow-delete, removed with it; files synth wrote that hold no objects go without asking', () => {
    const out = rendered('own-files');
    const tenants = path.join(out, name, 'tenants');
    writeFileSync(path.join(tenants, 'notes.txt'), 'do not lose me\n');
    writeFileSync(path.join(tenants, 'namespace.extra.json'), '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "extra"}}\n');
    mkdirSync(path.join(tenants, 'extra'));
    writeFileSync(path.join(tenants, 'extra', 'namespace.more.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: more\n');
    mkdirSync(path.join(tenants, 'empty'));
    writeFileSync(path.join(out, name, 'tutorials', 'my-notes.yaml'), 'mine: true\n');
    symlinkSync('/etc/hostname', path.join(tenants, 'hostname.yaml'));
    const before = readTreeFiles(out);
    const r = synth(out, [dropped]);
    expect(r.code).toBe(EXIT.failed);
    for (const line of [
      `- ${name}: the file tenants/notes.txt, which the render does not write`,
      `- ${name}: the file tenants/namespace.extra.json, which the render does not write`,
      `- ${name}: Namespace more (tenants/extra/namespace.more.yaml)`,
      `- ${name}: the empty folder tenants/empty/`,
      `- ${name}: the file tutorials/my-notes.yaml, which the render does not write`,
      `- ${name}: the symbolic link tenants/hostname.yaml (to /etc/hostname)`,
      inferenceNamespace(name),
    ]) expect(r.err).toContainEqual(line);
    // the dropped tenant's tutorial files are synth's own and hold no objects: not listed
    expect(r.err.filter((l) => l.includes('tutorials/skypilot'))).toEqual([]);
    expect(readTreeFiles(out)).toEqual(before);
    // what --allow-delete removes is said, except under --quiet (errors only)
    const c = capture();
    const allowed = main(['synth', '--config', dropped, '--out', out, '--no-validate', '--allow-delete'], c.io) as number;
    expect(allowed).toBe(EXIT.ok);
    expect(c.err).toContain(`- ${name}: the file tenants/notes.txt, which the render does not write`);
    expect(readdirSync(tenants)).not.toContain('notes.txt');
  });

  it('an unchanged render with a file of the user\'s beside it still lists the file (it is not swapped away unasked)', () => {
    const out = rendered('unchanged-extra');
    writeFileSync(path.join(out, name, 'kueue', 'README.txt'), 'mine\n');
    const r = synth(out, [reference]);
    expect(r.code).toBe(EXIT.failed);
    expect(r.err).toEqual([`- ${name}: the file kueue/README.txt, which the render does not write`, expect.stringMatching(/^error: 1 other file\(s\) of .* would be removed; nothing was written; re-run with --allow-delete if that is intended$/)]);
  });
});

describe('anything at the output root that is no cluster folder (the plain synth replaces the whole root)', () => {
  it('a file, a YAML file, a folder and a link of the user\'s are each listed; the root is kept as it was', () => {
    const out = path.join(work, 'root');
    expect(synthAll(out).code).toBe(0);
    writeFileSync(path.join(out, 'NOTES.md'), '# my notes\n');
    writeFileSync(path.join(out, 'namespace.mine.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: mine\n');
    const elsewhere = path.join(work, 'elsewhere');
    cpSync(path.join(out, name), elsewhere, { recursive: true });
    symlinkSync(elsewhere, path.join(out, 'linked'));
    const before = readdirSync(out).sort();
    const r = synthAll(out);
    expect(r.code).toBe(1);
    expect(r.err).toContain('- NOTES.md: the file NOTES.md, which is no folder of the render');
    expect(r.err).toContain('- namespace.mine.yaml: the file namespace.mine.yaml, which is no folder of the render');
    expect(r.err).toContain(`- linked: the symbolic link linked (to ${elsewhere}), which the write replaces with a plain folder`);
    // and the objects of the folder it leads to, which Argo CD would prune with it
    expect(r.err).toContainEqual(inferenceNamespace('linked'));
    expect(r.err.filter((l) => !/^- (NOTES\.md|namespace\.mine\.yaml|linked): /.test(l))).toEqual([]);
    expect(readdirSync(out).sort()).toEqual(before);
    const allowed = synthAll(out, true);
    expect(allowed.code).toBe(0);
    expect(allowed.err).toContain('- NOTES.md: the file NOTES.md, which is no folder of the render');
    expect(readdirSync(out).sort()).toEqual([name, 'fleet'].sort());
    // what the link pointed at is not the output's: it stays
    expect(readdirSync(elsewhere).length).toBeGreaterThan(5);
  });
});
