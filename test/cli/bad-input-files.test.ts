import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/commands/io';
import { INPUT_LIMITS, InputKind } from '../../src/input/limits';
import { BatchOutcome, runCliChildBatch } from '../child-cli';
import { aliasBomb, FLEET_FIXTURE, REFERENCE_FILE } from '../helpers';
import { kubeconfigFor } from '../preflight/api-server';

/*
 * Every reader of input files (description, snapshot, kubeconfig) through the one input reader:
 * each bad file exits 2 with its reason on one line naming the file, in bounded time (the child is
 * killed, and the cases fail, if it runs 120 s) and bounded memory (the child's peak RSS).
 */

/** The child's peak RSS: the CLI loads its render stack (about 200 MiB); /dev/zero read whole would take GiBs. */
const MAX_RSS = 512 * 1024 * 1024;

let dir: string;

const SNAPSHOT = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-1
    labels:
      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
  status:
    allocatable: {cpu: "188", memory: 1800Gi, nvidia.com/gpu: "8"}
`;

const node = (name: string, apiVersion = 'v1') => `- apiVersion: ${apiVersion}\n  kind: Node\n  metadata: {name: ${name}}\n`;

/** The kinds a command names on its command line (the project file is found, not named: test/project/project-file.test.ts). */
type CliKind = Exclude<InputKind, 'project'>;

/** A valid file of each kind, to spoil. */
const BASE: Record<CliKind, () => string> = {
  description: () => readFileSync(REFERENCE_FILE, 'utf8'),
  snapshot: () => SNAPSHOT,
  kubeconfig: () => kubeconfigFor('http://127.0.0.1:9'),
};

/** A top-level key of each base, to give twice. */
const TOP_KEY: Record<CliKind, string> = { description: 'name', snapshot: 'kind', kubeconfig: 'kind' };

function file(name: string, content: string | Buffer): string {
  const f = path.join(dir, name);
  writeFileSync(f, content);
  return f;
}

function fifo(name: string): string {
  const f = path.join(dir, name);
  if (!existsSync(f)) spawnSync('mkfifo', [f]);
  return f;
}

/** The command that reads a file of the kind. */
function command(kind: CliKind, f: string): string[] {
  if (kind === 'description') return ['synth', '--config', f, '--out', path.join(dir, 'out'), '--no-validate'];
  if (kind === 'snapshot') return ['init', '--snapshot', f];
  return ['init', '--kubeconfig', f, '--timeout', '5'];
}

interface Case {
  readonly kind: CliKind;
  readonly name: string;
  readonly file: () => string;
  readonly says: RegExp;
  readonly env?: Record<string, string>;
  /** Another command than the kind's usual one. */
  readonly args?: (f: string) => string[];
  readonly skip?: boolean;
}

const KINDS: readonly CliKind[] = ['description', 'snapshot', 'kubeconfig'];
const LINUX = process.platform === 'linux';

/** The cases every reader shares. */
const COMMON: Case[] = KINDS.flatMap((kind): Case[] => [
  { kind, name: 'a FIFO', file: () => fifo(`${kind}.fifo`), says: /fifo: not a regular file \(a pipe\)/, skip: !LINUX },
  { kind, name: '/dev/zero', file: () => '/dev/zero', says: /\/dev\/zero: not a regular file \(a device or socket\)/, skip: !existsSync('/dev/zero') },
  { kind, name: 'a folder', file: () => { mkdirSync(path.join(dir, `${kind}.d`), { recursive: true }); return path.join(dir, `${kind}.d`); }, says: /\.d: not a regular file \(a folder\)/ },
  {
    kind,
    name: 'over the size limit (lowered through its variable)',
    env: { [INPUT_LIMITS[kind].env]: '0.01' },
    file: () => file(`${kind}-big.yaml`, `${BASE[kind]()}\n#${'x'.repeat(20_000)}\n`),
    says: new RegExp(`big\\.yaml: the file is larger than 10\\.24 KiB, far more than ${INPUT_LIMITS[kind].what} needs; is it the right file\\? \\(${INPUT_LIMITS[kind].env}=<MiB> raises the limit\\)`),
  },
  { kind, name: 'invalid UTF-8', file: () => file(`${kind}-utf8.yaml`, Buffer.concat([Buffer.from(BASE[kind]()), Buffer.from('# caf\xe9\n', 'latin1')])), says: /utf8\.yaml: invalid UTF-8 at line \d+, column 6 \(byte 0xe9\): save the file as UTF-8/ },
  { kind, name: 'an alias bomb', file: () => file(`${kind}-bomb.yaml`, aliasBomb()), says: /bomb\.yaml: YAML aliases expand to more than 100 copies \(an alias bomb\?\)/ },
  {
    kind,
    name: 'a duplicate key',
    file: () => file(`${kind}-dup.yaml`, `${BASE[kind]()}${TOP_KEY[kind]}: again\n`),
    says: new RegExp(`dup\\.yaml(:\\d+:\\d+)?:? ${TOP_KEY[kind]}: duplicate key "${TOP_KEY[kind]}" \\(line \\d+; first given on line \\d+\\): keep one`),
  },
  {
    kind,
    name: 'a NUL byte',
    file: () => file(`${kind}-nul.yaml`, `${BASE[kind]()}# a\0b\n`),
    says: /nul\.yaml: control character U\+0000 at line \d+, column 4: not allowed in YAML or JSON text/,
  },
  { kind, name: 'nested too deep', file: () => file(`${kind}-deep.yaml`, `x: ${'['.repeat(200)}${']'.repeat(200)}\n`), says: /deep\.yaml(: (document 1, )?|:\d+:\d+ )x(\[0\])+: nested more than \d+ levels deep/ },
]);

const SNAPSHOTS: Case[] = [
  {
    kind: 'snapshot',
    name: 'a List inside a List',
    file: () => file('nested.yaml', `${SNAPSHOT}- apiVersion: v1\n  kind: List\n  items:\n  ${node('gpu-2').replace(/\n {2}/g, '\n    ')}`),
    says: /nested\.yaml: document 1, items\[1\]: a List inside a List, which kubectl never writes: put its items into the outer list/,
  },
  { kind: 'snapshot', name: 'the same object twice', file: () => file('twice.yaml', `${SNAPSHOT}${node('gpu-1')}`), says: /twice\.yaml: document 1, items\[1\]: Node gpu-1 is given twice \(first at .*items\[0\]\)/ },
  { kind: 'snapshot', name: 'a v2 Node', file: () => file('v2.yaml', `${SNAPSHOT}${node('gpu-2', 'v2')}`), says: /v2\.yaml: document 1, items\[1\]: Node gpu-2 has apiVersion v2, but Kubernetes serves Node as v1; take the snapshot again/ },
  {
    kind: 'snapshot',
    name: 'kueue.x-k8s.io/v9',
    file: () => file('v9.yaml', `${SNAPSHOT}- apiVersion: kueue.x-k8s.io/v9\n  kind: ClusterQueue\n  metadata: {name: cq}\n`),
    says: /v9\.yaml: document 1, items\[1\]: ClusterQueue cq has apiVersion kueue\.x-k8s\.io\/v9, but Kubernetes serves ClusterQueue as kueue\.x-k8s\.io\/v1beta1, kueue\.x-k8s\.io\/v1beta2/,
  },
  {
    kind: 'snapshot',
    name: 'a version its CRD in the snapshot does not serve',
    file: () => file('unserved.yaml', `${SNAPSHOT}- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n  metadata: {name: clusterqueues.kueue.x-k8s.io}\n`
      + '  spec: {group: kueue.x-k8s.io, scope: Cluster, names: {kind: ClusterQueue, plural: clusterqueues}, versions: [{name: v1beta1, served: true, storage: true}]}\n'
      + '- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: ClusterQueue\n  metadata: {name: cq}\n'),
    says: /ClusterQueue cq has apiVersion kueue\.x-k8s\.io\/v1beta2, but the CRD clusterqueues\.kueue\.x-k8s\.io in the same state serves kueue\.x-k8s\.io\/v1beta1/,
  },
  { kind: 'snapshot', name: 'an allocatable that is no quantity', file: () => file('eight.yaml', SNAPSHOT.replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: eight')), says: /eight\.yaml: document 1, items\[0\] \(Node gpu-1\): status\.allocatable\.nvidia\.com\/gpu: expected a quantity such as "8" or "1800Gi", got "eight"/ },
  {
    kind: 'snapshot',
    name: 'a size limit that is no size',
    env: { [INPUT_LIMITS.snapshot.env]: 'lots' },
    file: () => file('limit.yaml', SNAPSHOT),
    says: new RegExp(`${INPUT_LIMITS.snapshot.env}=lots: expected a size in MiB greater than 0 and at most 1024`),
  },
  { kind: 'snapshot', name: 'preflight reads the same way', args: (f) => ['preflight', '--config', REFERENCE_FILE, '--snapshot', f], file: () => fifo('preflight.fifo'), says: /--snapshot .*preflight\.fifo: not a regular file \(a pipe\)/, skip: !LINUX },
];

const KUBECONFIGS: Case[] = [
  { kind: 'kubeconfig', name: 'an empty kubeconfig', file: () => file('empty-kubeconfig', ''), says: /--kubeconfig .*empty-kubeconfig: the kubeconfig is empty \(no clusters, contexts or users\)/ },
  { kind: 'kubeconfig', name: 'not a kubeconfig', file: () => file('list-kubeconfig', '- a\n- b\n'), says: /list-kubeconfig: not a kubeconfig \(expected a mapping/ },
  {
    kind: 'kubeconfig',
    name: 'a certificate file that is /dev/zero',
    file: () => file('zero-ca', kubeconfigFor('https://127.0.0.1:9').replace('    insecure-skip-tls-verify: true\n', '    certificate-authority: /dev/zero\n')),
    says: /zero-ca: cluster\.certificate-authority \/dev\/zero: not a regular file \(a device or socket\); name a kubeconfig file/,
    skip: !existsSync('/dev/zero'),
  },
  {
    kind: 'kubeconfig',
    name: 'a token file that is a FIFO',
    file: () => file('fifo-token', kubeconfigFor('http://127.0.0.1:9').replace(/ {4}token: .*\n/, `    token-file: ${fifo('token.fifo')}\n`)),
    says: /fifo-token: user\.token-file .*token\.fifo: not a regular file \(a pipe\)/,
    skip: !LINUX,
  },
  {
    kind: 'kubeconfig',
    name: 'a current context it does not have',
    file: () => file('no-context', kubeconfigFor('http://127.0.0.1:9').replace('current-context: test', 'current-context: gone')),
    says: /no-context: the current-context "gone" is not among its contexts \(test\): pass --context NAME/,
  },
  {
    kind: 'kubeconfig',
    name: 'a removed auth provider',
    file: () => file('gcp', kubeconfigFor('https://127.0.0.1:9').replace(/ {4}token: .*\n/, '    auth-provider:\n      name: gcp\n      config: {cmd-path: /bin/sleep, cmd-args: "600"}\n')),
    says: /user "admin" authenticates with the gcp auth provider, which kubectl removed in 1\.26: use the exec credential plugin gke-gcloud-auth-plugin/,
  },
];

const HAS_OPENSSL = spawnSync('openssl', ['version']).status === 0;

/** Two self-signed certificates and their keys (openssl, once), base64 as a kubeconfig's *-data fields hold them. */
let pairs: { cert: string; key: string }[] | undefined;
function certificatePairs(): { cert: string; key: string }[] {
  pairs ??= ['a', 'b'].map((n) => {
    const [key, cert] = [path.join(dir, `${n}.key`), path.join(dir, `${n}.crt`)];
    spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${n}`]);
    return { cert: readFileSync(cert).toString('base64'), key: readFileSync(key).toString('base64') };
  });
  return pairs;
}

/** The kubeconfig of the cases with the user's token replaced by `user` lines (and the cluster's by `cluster`, when given). */
function kubeconfigWith(user: string, cluster = '    insecure-skip-tls-verify: true\n'): string {
  return kubeconfigFor('https://127.0.0.1:9').replace('    insecure-skip-tls-verify: true\n', cluster).replace(/ {4}token: .*\n/, user);
}

const NOT_BASE64_PEM = Buffer.from('not a PEM block\n').toString('base64');

/** Credentials the client cannot use (issue 52, round five): refused before any request, naming the field. */
const CREDENTIALS: Case[] = [
  { kind: 'kubeconfig', name: 'a token with a line break', file: () => file('token-newline', kubeconfigWith('    token: "abc\\ndef"\n')), says: /token-newline: user "admin": users\[\]\.user\.token holds a line break or another control character, which no request header carries/ },
  { kind: 'kubeconfig', name: 'a token file with a line break inside', file: () => file('token-file-newline', kubeconfigWith(`    token-file: ${file('token.txt', 'abc\ndef\n')}\n`)), says: /users\[\]\.user\.token holds a line break/ },
  { kind: 'kubeconfig', name: 'a password with a carriage return', file: () => file('password-cr', kubeconfigWith('    username: admin\n    password: "pw\\rX-Evil: 1"\n')), says: /users\[\]\.user\.password holds a line break/ },
  {
    kind: 'kubeconfig',
    name: 'key data that is no key',
    skip: !HAS_OPENSSL,
    file: () => file('no-key', kubeconfigWith(`    client-certificate-data: ${certificatePairs()[0].cert}\n    client-key-data: ${NOT_BASE64_PEM}\n`)),
    says: /no-key: user "admin": users\[\]\.user\.client-key-data holds no PEM private key/,
  },
  {
    kind: 'kubeconfig',
    name: 'certificate data that is no certificate',
    skip: !HAS_OPENSSL,
    file: () => file('no-cert', kubeconfigWith(`    client-certificate-data: ${NOT_BASE64_PEM}\n    client-key-data: ${certificatePairs()[0].key}\n`)),
    says: /users\[\]\.user\.client-certificate-data holds no PEM certificate/,
  },
  {
    kind: 'kubeconfig',
    name: 'a key that does not match its certificate',
    skip: !HAS_OPENSSL,
    file: () => file('mismatch', kubeconfigWith(`    client-certificate-data: ${certificatePairs()[0].cert}\n    client-key-data: ${certificatePairs()[1].key}\n`)),
    says: /users\[\]\.user\.client-key-data is not the key of client-certificate-data/,
  },
  { kind: 'kubeconfig', name: 'a key without its certificate', file: () => file('key-alone', kubeconfigWith(`    client-key-data: ${NOT_BASE64_PEM}\n`)), says: /users\[\]\.user\.client-key-data is given without client-certificate-data/ },
  {
    kind: 'kubeconfig',
    name: 'certificate-authority-data that is no certificate',
    file: () => file('bad-ca', kubeconfigWith('    token: t0ken-value\n', `    certificate-authority-data: ${NOT_BASE64_PEM}\n`)),
    says: /bad-ca: cluster "test": clusters\[\]\.cluster\.certificate-authority-data holds no PEM certificate/,
  },
  {
    kind: 'kubeconfig',
    name: 'insecure-skip-tls-verify beside a certificate authority (kubectl refuses it)',
    skip: !HAS_OPENSSL,
    file: () => file('insecure-ca', kubeconfigWith('    token: t0ken-value\n', `    insecure-skip-tls-verify: true\n    certificate-authority-data: ${certificatePairs()[0].cert}\n`)),
    says: /insecure-ca: cluster "test": clusters\[\]\.cluster\.insecure-skip-tls-verify is true beside a certificate-authority: kubectl refuses the two together/,
  },
  {
    kind: 'kubeconfig',
    name: 'insecure-skip-tls-verify beside a certificate-authority file',
    skip: !HAS_OPENSSL,
    file: () => file('insecure-ca-file', kubeconfigWith('    token: t0ken-value\n', `    insecure-skip-tls-verify: true\n    certificate-authority: ${file('ca.crt', Buffer.from(certificatePairs()[0].cert, 'base64'))}\n`)),
    says: /insecure-ca-file: cluster "test": clusters\[\]\.cluster\.insecure-skip-tls-verify is true beside a certificate-authority/,
  },
];

/**
 * A copy of the MultiKueue fleet fixture whose fleet.yaml is `make`'s (a FIFO, a link, a folder): the fleet description
 * that is no regular file is refused like every input, never ignored (the manager rendered as a plain cluster).
 */
function fleetWith(name: string, make: (fleetFile: string) => void): string {
  const folder = path.join(dir, `fleet-${name}`);
  cpSync(FLEET_FIXTURE, folder, { recursive: true });
  rmSync(path.join(folder, 'fleet.yaml'));
  make(path.join(folder, 'fleet.yaml'));
  return path.join(folder, 'fleet.yaml');
}

const synthFleet = (f: string) => ['synth', '--config', path.join(path.dirname(f), 'hub.yaml'), '--out', path.join(dir, 'out-fleet'), '--no-validate'];

const FLEETS: Case[] = [
  { kind: 'description', name: 'fleet.yaml that is a FIFO', args: synthFleet, file: () => fleetWith('fifo', (f) => spawnSync('mkfifo', [f])), says: /fleet\.yaml: not a regular file \(a pipe\)/, skip: !LINUX },
  { kind: 'description', name: 'fleet.yaml that is a dangling link', args: synthFleet, file: () => fleetWith('dangling', (f) => symlinkSync(path.join(dir, 'nowhere.yaml'), f)), says: /fleet\.yaml: a symbolic link that leads nowhere/ },
  { kind: 'description', name: 'fleet.yaml that is a link to /dev/zero', args: synthFleet, file: () => fleetWith('device', (f) => symlinkSync('/dev/zero', f)), says: /fleet\.yaml: not a regular file \(a device or socket\)/, skip: !existsSync('/dev/zero') },
  { kind: 'description', name: 'fleet.yaml that is a folder', args: synthFleet, file: () => fleetWith('folder', (f) => mkdirSync(f)), says: /fleet\.yaml: not a regular file \(a folder\)/ },
];

const CASES = [...COMMON, ...SNAPSHOTS, ...KUBECONFIGS, ...CREDENTIALS, ...FLEETS].filter((c) => !c.skip).map((c) => ({ ...c, title: `${c.kind}: ${c.name}` }));

/** The file each case reads (its name is in the line), by case. */
const files = new Map<Case, string>();
let batch: Promise<BatchOutcome>;

// One child runs every case (each through the CLI's entry, with its own environment, its output captured):
// the children were the same but for the file they read. The bounds hold for each case, since they hold for
// them all: the child is killed (and every case fails, naming the one that had not ended) after 120 s, and
// its peak RSS is the highest of any case.
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'bad-input-files-'));
  const runs = CASES.map((c) => {
    const f = c.file();
    files.set(c, f);
    return { args: c.args?.(f) ?? command(c.kind, f), env: c.env };
  });
  batch = runCliChildBatch(dir, runs, 120_000);
  batch.catch(() => {});
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bad input files of every reader exit 2 with one line naming the file, in bounded time and memory', () => {
  it.each(CASES)('$title', async (c) => {
    const r = (await batch).runs[CASES.indexOf(c)];
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    const lines = r.stderr.trimEnd().split('\n');
    // the reason on one line, and nothing else (a description's problems: one line each, naming file, line and field)
    expect(lines.filter((l) => c.says.test(l)), r.stderr).toHaveLength(1);
    expect(lines.filter((l) => !c.says.test(l)), r.stderr).toEqual([]);
    expect(r.stderr).toContain(path.basename(files.get(c)!));
    expect(r.stderr).not.toMatch(/internal error|\n\s+at .*:\d+:\d+/);
    expect(r.stdout).toBe('');
  });

  it('in bounded memory, and nothing printed past the CLI\'s own lines', async () => {
    const b = await batch;
    expect(b.runs).toHaveLength(CASES.length);
    expect(b.maxRSS).toBeLessThan(MAX_RSS);
    expect(b.stdout).toBe('');
    expect(b.stderr).toBe('');
  });
});
