import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EXIT } from '../../src/cli';
import { InputError } from '../../src/errors';
import { descriptionJsonSchemaText } from '../../src/model/json-schema';
import { packageVersion } from '../../src/paths';
import { findProjectFile, PROJECT_FILE, projectOf, readProject, requireProject } from '../../src/project/project-file';
import { aliasBomb, fixtureProject, runMain } from '../helpers';
import { SNAPSHOT } from '../preflight/snapshots';

/** A project folder with this project file text (and whatever `setup` adds). */
function projectWith(text: string, setup: (root: string) => void = () => {}): string {
  const root = mkdtempSync(path.join(tmpdir(), 'project-file-'));
  writeFileSync(path.join(root, PROJECT_FILE), text);
  setup(root);
  return path.join(root, PROJECT_FILE);
}

/** The one-line bad-input message reading `file` gives. */
function refusal(file: string): string {
  try {
    readProject(file);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error(`${file} was accepted`);
}

describe('the project file', () => {
  it('is found from the working folder or any folder below it, the nearest first', () => {
    const outer = projectWith('clusters: clusters\n');
    const root = path.dirname(outer);
    const deep = path.join(root, 'a', 'b', 'c');
    mkdirSync(deep, { recursive: true });
    expect(findProjectFile(deep)).toBe(outer);
    writeFileSync(path.join(root, 'a', PROJECT_FILE), 'out: rendered\n');
    expect(findProjectFile(deep)).toBe(path.join(root, 'a', PROJECT_FILE));
    expect(findProjectFile(mkdtempSync(path.join(tmpdir(), 'no-project-')))).toBeUndefined();
  });

  it('names folders relative to itself; both keys have defaults (clusters/, dist/)', () => {
    const file = projectWith('# a comment\nclusters: descriptions/\nout: build/manifests\n');
    const root = path.dirname(file);
    expect(readProject(file)).toEqual({ file, root, clusters: path.join(root, 'descriptions'), out: path.join(root, 'build', 'manifests') });
    const empty = projectWith('');
    expect(readProject(empty)).toMatchObject({ clusters: path.join(path.dirname(empty), 'clusters'), out: path.join(path.dirname(empty), 'dist') });
  });

  it.each([
    ['an unknown key, at its line and column', 'clusters: clusters\n  # typo below\noutdir: dist\n', /gpu-cluster-manifests\.yaml:3:1 outdir: unknown key; a project file has clusters \(.*\), out \(.*\)$/],
    ['a value that is no path', 'clusters: 3\n', /:1:11 clusters: expected a folder path relative to gpu-cluster-manifests\.yaml, got 3$/],
    ['an empty path', 'out: ""\n', /:1:6 out: expected a folder path .*, got ""$/],
    ['a key without a value', 'clusters:\nout: dist\n', /:1:10 clusters: expected a folder path .*, got null$/],
    ['an absolute path', 'out: /var/www\n', /:1:6 out: expected a path relative to the project folder, got the absolute path "\/var\/www"$/],
    ['a folder outside the project folder', 'clusters: ../elsewhere\n', /:1:11 clusters: "\.\.\/elsewhere" is outside the project folder .*; name a folder inside it$/],
    ['the project folder itself as the output (synth would replace the project)', 'out: .\n', /:1:6 out: "\." is the project folder itself; name a folder inside it \(dist\)$/],
    ['the output inside the descriptions', 'clusters: clusters\nout: clusters/dist\n', /:2:6 out: clusters\/dist and the descriptions' folder clusters overlap; synth replaces its output folder as a whole/],
    ['the descriptions inside the output', 'clusters: dist/clusters\n', /out: dist and the descriptions' folder dist\/clusters overlap/],
    ['not a mapping', '- clusters\n', /gpu-cluster-manifests\.yaml:1:1: expected a mapping with clusters and out, got \["clusters"\]$/],
    ['a NUL byte', 'out: "a\\u0000b"\n', /:1:6 out: the path contains a NUL byte$/],
  ])('refuses %s (exit 2, one line naming file:line:column and the key)', (_what, text, says) => {
    const message = refusal(projectWith(text));
    expect(message).toMatch(says);
    expect(message).not.toContain('\n');
  });

  it('refuses a folder that is a file, and one that leads outside through a symbolic link', () => {
    expect(refusal(projectWith('out: dist\n', (root) => writeFileSync(path.join(root, 'dist'), 'x')))).toMatch(/:1:6 out: "dist" is a file, not a folder$/);
    const outside = mkdtempSync(path.join(tmpdir(), 'outside-'));
    expect(refusal(projectWith('clusters: linked\n', (root) => symlinkSync(outside, path.join(root, 'linked'))))).toMatch(/clusters: "linked" is outside the project folder/);
  });

  it('is read through the one input reader: duplicate keys, alias bombs and oversized files are refused with its messages', () => {
    expect(refusal(projectWith('out: a\nout: b\n'))).toMatch(/out: duplicate key "out" \(line 2; first given on line 1\): keep one/);
    expect(refusal(projectWith(aliasBomb()))).toMatch(/YAML aliases expand to more than 10 copies/);
    expect(refusal(projectWith(`out: dist\n#${'x'.repeat(1024 * 1024)}\n`))).toMatch(/the file is larger than 1 MiB, far more than a project file needs/);
    const folder = path.join(mkdtempSync(path.join(tmpdir(), 'project-dir-')), PROJECT_FILE);
    mkdirSync(folder);
    expect(refusal(folder)).toMatch(/not a regular file \(a folder\)/);
  });

  it('a command that needs one says so in one line when there is none', () => {
    const none = mkdtempSync(path.join(tmpdir(), 'no-project-'));
    expect(projectOf(none)).toBeUndefined();
    expect(() => requireProject('synth', '--config FILE ... and --out DIR', none))
      .toThrow(new RegExp(`^synth: no ${PROJECT_FILE.replace('.', '\\.')} in .*no-project-[^ ]+ or any folder above it; .*gpu-cluster-manifests new DIR.*or name --config FILE \\.\\.\\. and --out DIR$`));
  });
});

describe('commands in a project take their folders from it', () => {
  const cwd = process.cwd();
  afterEach(() => process.chdir(cwd));
  const run = runMain;

  it('synth renders the descriptions folder into the output folder from any folder of the project; init writes into the descriptions folder', async () => {
    const root = fixtureProject();
    process.chdir(path.join(root, 'clusters'));
    const synth = await run('synth', '--no-validate', '--quiet');
    expect(synth.code, synth.err.join('\n')).toBe(EXIT.ok);
    expect(readdirSync(path.join(root, 'dist')).sort()).toEqual(['fleet', 'instant-cluster', 'training-cluster']);

    const init = await run('init', '--snapshot', SNAPSHOT, '--name', 'lab');
    expect(init.code, init.err.join('\n')).toBe(EXIT.ok);
    expect(init.err).toEqual(['wrote lab.yaml: check every TODO(init) line']);
    const lab = parse(readFileSync(path.join(root, 'clusters', 'lab.yaml'), 'utf8'));
    // gitops.path: the cluster's folder of the project's output, relative to the project folder
    expect(lab.gitops.path).toBe('dist/lab');
    const again = await run('init', '--snapshot', SNAPSHOT, '--name', 'lab');
    expect(again.code).toBe(EXIT.badInput);
    expect(again.err).toEqual([expect.stringMatching(/lab\.yaml: the file exists; init never overwrites/)]);
    const printed = await run('init', '--snapshot', SNAPSHOT, '--name', 'lab', '--out', '-');
    expect(printed.out.join('\n')).toContain('name: lab');
  });

  it('schema writes the description schema beside the descriptions and says so (--out - prints it); outside a project it prints', async () => {
    const root = fixtureProject();
    process.chdir(root);
    const schemaFile = path.join(root, 'clusters', 'cluster-description.schema.json');
    writeFileSync(schemaFile, '{}\n');
    const wrote = await run('schema');
    expect(wrote.code).toBe(EXIT.ok);
    expect(wrote.err).toEqual([
      `wrote clusters/cluster-description.schema.json: the JSON Schema of the description (gpu-cluster-manifests ${packageVersion()})`,
      `wrote clusters/fleet.schema.json: the JSON Schema of the fleet description (gpu-cluster-manifests ${packageVersion()})`,
    ]);
    expect(readFileSync(schemaFile, 'utf8')).toBe(descriptionJsonSchemaText());
    const again = await run('schema');
    expect(again.err).toEqual([
      `clusters/cluster-description.schema.json: the JSON Schema of the description (gpu-cluster-manifests ${packageVersion()}), unchanged`,
      `clusters/fleet.schema.json: the JSON Schema of the fleet description (gpu-cluster-manifests ${packageVersion()}), unchanged`,
    ]);
    expect((await run('schema', '--out', '-')).out.join('\n')).toBe(descriptionJsonSchemaText().trimEnd());
    process.chdir(mkdtempSync(path.join(tmpdir(), 'no-project-')));
    const outside = await run('schema');
    expect(outside.out.join('\n')).toBe(descriptionJsonSchemaText().trimEnd());
  });

  it('without a project, synth, diff and check say what they need in one line; --config and --out still work', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'no-project-'));
    process.chdir(dir);
    for (const args of [['synth'], ['synth', '--config', path.join(fixtureProject(), 'clusters', 'instant-cluster.yaml')], ['diff'], ['check']]) {
      const r = await run(...args);
      expect(r.code, args.join(' ')).toBe(EXIT.badInput);
      expect(r.err, args.join(' ')).toEqual([expect.stringMatching(new RegExp(`^error: ${args[0]}: no gpu-cluster-manifests\\.yaml in .* or any folder above it; .*; nothing was written$`))]);
    }
    const synth = await run('synth', '--config', path.join(fixtureProject(), 'clusters', 'instant-cluster.yaml'), '--out', 'out', '--no-validate', '--quiet');
    expect(synth.code, synth.err.join('\n')).toBe(EXIT.ok);
    expect(existsSync(path.join(dir, 'out', 'instant-cluster', 'kueue'))).toBe(true);
  });

  it('an output folder not made yet under a symbolic link out of the project: synth refuses it and writes nothing outside', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'outside-'));
    const root = fixtureProject();
    writeFileSync(path.join(root, PROJECT_FILE), 'clusters: clusters\nout: link/dist\n');
    symlinkSync(outside, path.join(root, 'link'));
    // a dangling link leads outside just the same: making it later would not land inside
    const dangling = fixtureProject();
    writeFileSync(path.join(dangling, PROJECT_FILE), 'out: gone/dist\n');
    symlinkSync(path.join(outside, 'not-yet'), path.join(dangling, 'gone'));
    for (const [project, what] of [[root, 'link/dist'], [dangling, 'gone/dist']]) {
      process.chdir(project);
      const r = await run('synth', '--no-validate', '--quiet');
      expect(r.code, r.err.join('\n')).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(new RegExp(`^error: gpu-cluster-manifests\\.yaml:\\d+:6 out: "${what}" is outside the project folder .* \\(through a symbolic link, to ${outside.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/.*dist\\); name a folder inside it; nothing was written$`))]);
    }
    expect(readdirSync(outside)).toEqual([]);
  });

  it('a broken project file is bad input of every command that reads it', async () => {
    const file = projectWith('clusters: clusters\nextra: 1\n');
    process.chdir(path.dirname(file));
    for (const command of ['synth', 'diff', 'check']) {
      const r = await run(command);
      expect(r.code, command).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(/^error: gpu-cluster-manifests\.yaml:2:1 extra: unknown key; .*; nothing was written$/)]);
    }
  });
});
