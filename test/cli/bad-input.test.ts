import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CACHE_ENV } from '../../src/cache/compiled-cache';
import { EXIT } from '../../src/cli';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { PROJECT_FILE } from '../../src/project/project-file';
import { runCliChild } from '../child-cli';
import { aliasBomb, crdOf, fixtureProject, HAS_SCHEMAS, readTreeFiles, REFERENCE_FILE, runCliInProcess } from '../helpers';

/*
 * Hostile input and a hostile machine: every case exits with the documented code and one line
 * naming the file, field or path, never "internal error", and leaves the output folder
 * byte-identical (nothing half-written, no leftovers, no lock).
 */

let dir: string;
let out: string;
const reference = () => readFileSync(REFERENCE_FILE, 'utf8');

function file(name: string, content: string | Buffer): string {
  const f = path.join(dir, name);
  writeFileSync(f, content);
  return f;
}

interface Case {
  readonly name: string;
  /** The command line (built lazily: files are written in beforeAll). */
  readonly args: () => string[];
  readonly code: number;
  /** The line that explains it (names the field, file or path). */
  readonly says: RegExp;
  readonly env?: Record<string, string>;
  readonly skip?: boolean;
}

const synth = (config: () => string, ...more: string[]) => () => ['synth', '--config', config(), '--out', out, '--no-validate', ...more];

/** synth validating against the schema folder `schemas`. */
const validating = (schemas: () => string) => () => ['synth', '--config', REFERENCE_FILE, '--out', out, '--schemas', schemas()];

/** A FIFO (made once) at `name` under the test's folder (or at an absolute path). */
function fifo(name: string): string {
  const f = path.resolve(dir, name);
  if (!existsSync(f)) spawnSync('mkfifo', [f]);
  return f;
}

/** A schema folder `name` under the test's folder, made once by `setup`. */
function schemaFolder(name: string, setup: (folder: string) => void): string {
  const d = path.join(dir, name);
  if (!existsSync(d)) {
    mkdirSync(d);
    setup(d);
  }
  return d;
}

const CASES: Case[] = [
  { name: 'GPU workers beyond exact memory totals', args: synth(() => file('count.yaml', reference().replace(/\n {4}count: 2\n/, '\n    count: 4700\n'))), code: EXIT.badInput, says: /\.yaml:\d+:\d+ nodes\.gpuWorkers\.count: 4700 nodes x 1800Gi is more memory than/m },
  { name: 'more nodes than Kubernetes supports', args: synth(() => file('count2.yaml', reference().replace(/\n {4}count: 2\n/, '\n    count: 5001\n'))), code: EXIT.badInput, says: /\.yaml:\d+:\d+ nodes\.gpuWorkers\.count: expected at most 5000 nodes/m },
  { name: 'memory of 100000Pi', args: synth(() => file('memory.yaml', reference().replace(/\n {4}memory: .*\n/, '\n    memory: 100000Pi\n'))), code: EXIT.badInput, says: /\.yaml:\d+:\d+ nodes\.gpuWorkers\.memory: expected at most 1Pi/m },
  { name: 'cpu of 1e400', args: synth(() => file('cpu.yaml', reference().replace(/\n {4}cpu: .*\n/, '\n    cpu: "1e400"\n'))), code: EXIT.badInput, says: /\.yaml:\d+:\d+ nodes\.gpuWorkers\.cpu: expected at most 100000 cores/m },
  { name: 'a GPU quota beyond any cluster', args: synth(() => file('quota.yaml', reference().replace(/\n {4}gpus: \d+\n/, '\n    gpus: 99999999\n'))), code: EXIT.badInput, says: /\.yaml:\d+:\d+ tenants\[\d\]\.gpus: expected at most 1280000 GPUs \(5000 nodes x 256\), got 99999999/m },
  { name: 'a YAML alias bomb', args: synth(() => file('bomb.yaml', aliasBomb())), code: EXIT.badInput, says: /bomb\.yaml: YAML aliases expand to more than 100 copies/ },
  { name: 'nesting too deep', args: synth(() => file('deep.yaml', `x: ${'['.repeat(200)}${']'.repeat(200)}\n`)), code: EXIT.badInput, says: /\.yaml:\d+:\d+ x(\[0\])+: nested more than 32 levels deep/m },
  { name: 'nesting too deep for the parser', args: synth(() => file('deeper.yaml', `x: ${'['.repeat(200_000)}${']'.repeat(200_000)}\n`)), code: EXIT.badInput, says: /deeper\.yaml: fields nested too deeply to parse/ },
  { name: 'invalid UTF-8 in a value', args: synth(() => file('utf8.yaml', Buffer.concat([Buffer.from(reference().replace('gpuProduct: ', 'gpuProduct: X')), Buffer.from([0x0a, 0x23, 0x20, 0x61, 0xff, 0xfe, 0x0a])]))), code: EXIT.badInput, says: /utf8\.yaml: invalid UTF-8 at line \d+, column 4 \(byte 0xff\)/ },
  { name: 'a duplicate key', args: synth(() => file('dup.yaml', reference().replace(/\n {4}count: 2\n/, '\n    count: 2\n    count: 3\n'))), code: EXIT.badInput, says: /\.yaml:\d+:\d+ nodes\.gpuWorkers\.count: duplicate key "count" \(line \d+; first given on line \d+\)/m },
  { name: '--config /dev/zero', args: synth(() => '/dev/zero'), code: EXIT.badInput, says: /^\/dev\/zero: not a regular file \(a device or socket\)/m, skip: !existsSync('/dev/zero') },
  { name: '--config of a folder', args: synth(() => dir), code: EXIT.badInput, says: /: not a regular file \(a folder\)/ },
  { name: '--config of a FIFO', args: synth(() => fifo('fifo')), code: EXIT.badInput, says: /fifo: not a regular file \(a pipe\)/, skip: process.platform !== 'linux' },
  { name: 'a description over 8 MiB', args: synth(() => file('huge.yaml', `${reference()}\n#${'x'.repeat(9 * 1024 * 1024)}\n`)), code: EXIT.badInput, says: /huge\.yaml: the file is larger than 8 MiB/ },
  { name: '--out ""', args: () => ['synth', '--config', REFERENCE_FILE, '--out', '', '--no-validate'], code: EXIT.badInput, says: /--out "": empty path/ },
  { name: '--out with a 300-character component', args: () => ['synth', '--config', REFERENCE_FILE, '--out', path.join(dir, 'x'.repeat(300)), '--no-validate'], code: EXIT.badInput, says: /--out .*: the path has a component of 300 bytes .*more than the 255/ },
  { name: '--out under /proc (no mkdir loop)', args: () => ['synth', '--config', REFERENCE_FILE, '--out', '/proc/nonexistent/x', '--no-validate'], code: EXIT.badInput, says: /output folder \/proc\/nonexistent\/x: cannot mkdir \/proc\/nonexistent: no such file or folder \(ENOENT\)/, skip: !existsSync('/proc/self') },
  { name: 'a description inside the cluster folder it renders', args: () => ['synth', '--config', path.join(out, 'instant-cluster', 'mine.yaml'), '--out', out, '--no-validate'], code: EXIT.badInput, says: /mine\.yaml: the description lies inside .*instant-cluster, which synth replaces/ },
  { name: 'diff --out ""', args: () => ['diff', '--config', REFERENCE_FILE, '--out', '', '--no-validate'], code: EXIT.badInput, says: /--out "": empty path/ },
  { name: 'check --config /dev/zero', args: () => ['check', out, '--config', '/dev/zero'], code: EXIT.badInput, says: /^\/dev\/zero: not a regular file/m, skip: !existsSync('/dev/zero') },
  { name: `${CACHE_ENV} pointing at a file`, args: () => ['synth', '--config', REFERENCE_FILE, '--out', out], env: { [CACHE_ENV]: REFERENCE_FILE }, code: EXIT.badInput, says: new RegExp(`${CACHE_ENV}=.*instant-cluster\\.yaml: not a folder`), skip: !HAS_SCHEMAS },
  // schema files are read through the input reader: only regular files, bounded, before any is fingerprinted or read
  { name: '--schemas of a FIFO', args: validating(() => fifo('schema-fifo')), code: EXIT.badInput, says: /^error: --schemas .*schema-fifo: not a regular file \(a pipe\); a schema folder holds CRD YAML files and a \*definitions\.json; nothing was written$/m, skip: process.platform !== 'linux' },
  { name: '--schemas of a folder holding a FIFO', args: validating(() => schemaFolder('with-fifo', (d) => fifo(path.join(d, 'crds.yaml')))), code: EXIT.badInput, says: /^error: schema file .*with-fifo\/crds\.yaml: not a regular file \(a pipe\)/m, skip: process.platform !== 'linux' },
  { name: '--schemas of a folder holding a link to /dev/zero', args: validating(() => schemaFolder('with-zero', (d) => symlinkSync('/dev/zero', path.join(d, 'zero.yaml')))), code: EXIT.badInput, says: /^error: schema file .*with-zero\/zero\.yaml: not a regular file \(a device or socket\)/m, skip: !existsSync('/dev/zero') },
  { name: '--schemas /dev/null', args: validating(() => '/dev/null'), code: EXIT.badInput, says: /^error: --schemas \/dev\/null: not a regular file \(a device or socket\)/m, skip: !existsSync('/dev/null') },
  { name: 'a schema file over the limit', args: validating(() => schemaFolder('with-huge', (d) => { writeFileSync(path.join(d, 'huge.json'), ''); truncateSync(path.join(d, 'huge.json'), 40 * 1024 * 1024); })), code: EXIT.badInput, says: /^error: schema file .*huge\.json: the file is larger than 32 MiB, far more than a schema file \(CRDs or the core definitions\) needs; .*GPU_CLUSTER_MANIFESTS_MAX_SCHEMA_FILE_MIB=<MiB> raises the limit/m },
  // a path given with control characters is quoted in the message, never echoed raw (ESC drives the terminal, a line break forges a line)
  { name: '--config naming a file with an escape sequence and a line break', args: synth(() => path.join(dir, 'no\u001b[2Jsuch\nerror: forged.yaml')), code: EXIT.badInput, says: /^error: --config .*no\\u001b\[2Jsuch\\nerror: forged\.yaml: no such file; nothing was written$/m },
  { name: '--out through a file whose name holds an escape sequence', args: () => ['synth', '--config', REFERENCE_FILE, '--out', path.join(file('f\u001b[31m', 'x'), 'out'), '--no-validate'], code: EXIT.badInput, says: /^error: --out .*f\\u001b\[31m\/out: cannot stat .*f\\u001b\[31m\/out: a part of the path is a file, not a folder \(ENOTDIR\)/ },
  { name: 'validate of a path with a line break', args: () => ['validate', path.join(dir, 'nothing\nok: 0 errors')], code: EXIT.badInput, says: /^error: validate: .*nothing\\nok: 0 errors: no such file or folder; nothing was written$/m },
  { name: 'a truncated CRD under --schemas', args: () => ['synth', '--config', REFERENCE_FILE, '--out', out, '--schemas', path.join(dir, 'crds')], code: EXIT.badInput, says: /schema file .*kueue\.x-k8s\.io_clusterqueues\.yaml: .*truncated or corrupted/, skip: !HAS_SCHEMAS },
];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'bad-input-'));
  out = path.join(dir, 'out');
  // a previous render that must survive every case byte for byte
  mkdirSync(path.join(out, 'instant-cluster', 'storage'), { recursive: true });
  writeFileSync(path.join(out, 'instant-cluster', 'storage', 'storageclass.local-path.yaml'), 'previous render\n');
  writeFileSync(path.join(out, 'instant-cluster', 'mine.yaml'), reference());
  mkdirSync(path.join(out, 'fleet'));
  writeFileSync(path.join(out, 'fleet', 'README.md'), 'previous fleet\n');
  if (HAS_SCHEMAS) {
    cpSync(DEFAULT_SCHEMAS, path.join(dir, 'crds'), { recursive: true });
    const crd = path.join(dir, 'crds', 'kueue', 'kueue.x-k8s.io_clusterqueues.yaml');
    writeFileSync(crd, readFileSync(crd, 'utf8').slice(0, 3000));
  }
});

async function run(c: Case): Promise<{ code: number; stderr: string }> {
  const r = await runCliInProcess(c.args(), { env: c.env });
  return { code: r.code, stderr: r.stderr };
}

describe('bad input and unusable paths exit with a one-line reason and leave the output byte-identical', () => {
  it.each(CASES.filter((c) => !c.skip))('$name', async (c) => {
    const before = readTreeFiles(out);
    const r = await run(c);
    expect(r.code, r.stderr).toBe(c.code);
    expect(r.stderr).toMatch(c.says);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at .*:\d+:\d+/);
    // whatever the input holds, the messages carry no control character but their line ends
    expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(readTreeFiles(out)).toEqual(before);
    expect(readdirSync(out).sort()).toEqual(['fleet', 'instant-cluster']);
  }, 60_000);
});

describe('control characters in a path the project file gives never reach the terminal raw', () => {
  it('synth into out: "d<ESC>[31mx<LF>fake: line": the summary quotes it, nothing drives the terminal or forges a line', async () => {
    const root = fixtureProject();
    writeFileSync(path.join(root, PROJECT_FILE), 'clusters: clusters\nout: "d\\u001b[31mx\\nfake: line"\n');
    const r = await runCliChild(root, ['synth', '--no-validate']);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(r.stdout).toMatch(/^wrote \d+ files to d\\u001b\[31mx\\nfake: line: /m);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(r.stdout).not.toMatch(/^fake: line/m);
  }, 120_000);
});

describe('a CRD pattern with catastrophic backtracking', () => {
  it('is evaluated in linear time (RE2, as the API server), compiled afresh and from the validator cache: the value is refused, the command ends', async () => {
    const work = mkdtempSync(path.join(tmpdir(), 'backtracking-'));
    const schemas = path.join(work, 'schemas');
    mkdirSync(schemas);
    const crd = crdOf('example.com', 'Evil', 'Cluster', { type: 'object', properties: { spec: { type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } } } } });
    writeFileSync(path.join(schemas, 'evil.yaml'), stringify(crd));
    const tree = path.join(work, 'tree');
    mkdirSync(tree);
    // JavaScript's backtracking takes some 2^40 steps for this value: hours
    writeFileSync(path.join(tree, 'evil.yaml'), stringify({ apiVersion: 'example.com/v1', kind: 'Evil', metadata: { name: 'x' }, spec: { name: `${'a'.repeat(40)}!` } }));
    const cache = path.join(work, 'cache');
    for (const env of [{ [CACHE_ENV]: 'off' }, { [CACHE_ENV]: cache }, { [CACHE_ENV]: cache }]) {
      const r = await runCliChild(work, ['validate', tree, '--schemas', schemas], env, 60_000);
      expect(r.code, r.stderr).toBe(EXIT.failed);
      expect(r.stderr).toMatch(/^error: .*Evil x spec\.name: must match pattern "\^\(a\+\)\+\$"$/m);
    }
  }, 240_000);
});
