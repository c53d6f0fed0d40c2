import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { EXIT, main } from '../../src/cli';
import { REFERENCE_FILE, referenceInput } from '../helpers';

type Input = ReturnType<typeof referenceInput>;

/** A broken description, the field path the message must name, and a word the message must contain. */
interface Case {
  readonly name: string;
  readonly edit: (d: Input) => void;
  readonly path: string;
  readonly says: RegExp;
}

const CASES: Case[] = [
  { name: 'GPUs per node as a word', edit: (d) => { d.nodes.gpuWorkers.gpusPerNode = 'eight'; }, path: 'nodes.gpuWorkers.gpusPerNode', says: /expected a positive integer, got "eight"/ },
  { name: 'zero workers', edit: (d) => { d.nodes.gpuWorkers.count = 0; }, path: 'nodes.gpuWorkers.count', says: /positive integer, got 0/ },
  { name: 'negative GPUs per node', edit: (d) => { d.nodes.gpuWorkers.gpusPerNode = -8; }, path: 'nodes.gpuWorkers.gpusPerNode', says: /positive integer, got -8/ },
  { name: 'fractional worker count', edit: (d) => { d.nodes.gpuWorkers.count = 1.5; }, path: 'nodes.gpuWorkers.count', says: /positive integer, got 1.5/ },
  { name: 'unknown top-level field', edit: (d) => { d.gpus = 16; }, path: 'gpus', says: /unknown field/ },
  { name: 'unknown nested field (typo)', edit: (d) => { d.nodes.gpuWorkers.gpuPerNode = 8; }, path: 'nodes.gpuWorkers.gpuPerNode', says: /unknown field/ },
  { name: 'cluster name not a DNS label', edit: (d) => { d.name = 'Instant_Cluster'; }, path: 'name', says: /DNS-1123 label/ },
  { name: 'tenant name not a DNS label', edit: (d) => { d.tenants[0].name = 'Research Team'; }, path: 'tenants[0].name', says: /DNS-1123 label/ },
  { name: 'duplicate tenant names', edit: (d) => { d.tenants[1].name = 'research'; }, path: 'tenants[1].name', says: /duplicate tenant name "research"/ },
  { name: 'tenants over capacity', edit: (d) => { d.tenants[1].gpus = 10; }, path: 'tenants[1].gpus', says: /claim 18 GPUs but the cluster has 16/ },
  { name: 'empty HCA list', edit: (d) => { d.network.infiniband.hcas = []; }, path: 'network.infiniband.hcas', says: /at least one HCA/ },
  { name: 'default StorageClass that does not exist', edit: (d) => { d.storage.defaultClass = 'fast-ssd'; }, path: 'storage.defaultClass', says: /local-path, shared-path, local-disk.*got "fast-ssd"/ },
  { name: 'memory that is not a quantity', edit: (d) => { d.nodes.gpuWorkers.memory = 'lots'; }, path: 'nodes.gpuWorkers.memory', says: /memory quantity/ },
  { name: 'relative local disk path', edit: (d) => { d.nodes.gpuWorkers.localDisk.path = 'mnt/nvme'; }, path: 'nodes.gpuWorkers.localDisk.path', says: /absolute path/ },
  { name: 'missing required section', edit: (d) => { delete d.storage; }, path: 'storage', says: /required field is missing/ },
  { name: 'sample image tagged latest', edit: (d) => { d.samples.ncclTests.image = 'ghcr.io/coreweave/nccl-tests:latest'; }, path: 'samples.ncclTests.image', says: /latest/ },
  { name: 'sample image without a tag', edit: (d) => { d.samples.ncclTests.image = 'ghcr.io/coreweave/nccl-tests'; }, path: 'samples.ncclTests.image', says: /pinned image/ },
  { name: 'two default priorities', edit: (d) => { d.queueing.priorities[0].default = true; }, path: 'queueing.priorities', says: /at most one priority/ },
  { name: 'priority above the user range', edit: (d) => { d.queueing.priorities[2].value = 2_000_000_000; }, path: 'queueing.priorities[2].value', says: /at most 1000000000/ },
  { name: 'tenant in a system namespace', edit: (d) => { d.tenants[0].namespace = 'kube-system'; }, path: 'tenants[0].namespace', says: /system namespace/ },
  { name: 'rdmaHcaMax out of range', edit: (d) => { d.network.infiniband.rdmaSharedDevice.hcaMax = 0; }, path: 'network.infiniband.rdmaSharedDevice.hcaMax', says: /from 1 to/ },
  { name: 'RDMA vendor not hex', edit: (d) => { d.network.infiniband.rdmaSharedDevice.vendors = ['mellanox']; }, path: 'network.infiniband.rdmaSharedDevice.vendors[0]', says: /hex PCI vendor id/ },
  // what Argo CD would pass to git: never an option, a command transport, this machine's files or a path out of the repository
  { name: 'repoURL that git takes as an option', edit: (d) => { d.gitops.repoURL = '--upload-pack=touch /tmp/pwned'; }, path: 'gitops.repoURL', says: /expected a Git repository URL/ },
  { name: 'repoURL of the ext:: transport', edit: (d) => { d.gitops.repoURL = 'ext::sh -c touch% /tmp/pwned'; }, path: 'gitops.repoURL', says: /expected a Git repository URL/ },
  { name: 'repoURL of a local folder', edit: (d) => { d.gitops.repoURL = 'file:///etc'; }, path: 'gitops.repoURL', says: /expected a Git repository URL/ },
  { name: 'targetRevision that git takes as an option', edit: (d) => { d.gitops.targetRevision = '--output=/tmp/x'; }, path: 'gitops.targetRevision', says: /expected a Git revision/ },
  { name: 'path out of the repository', edit: (d) => { d.gitops.path = 'dist/../../etc'; }, path: 'gitops.path', says: /"\.\." leads out of it/ },
  { name: 'absolute path', edit: (d) => { d.gitops.path = '/etc'; }, path: 'gitops.path', says: /no leading "\/"/ },
  // durations their readers refuse (Prometheus' model.ParseDuration: each unit once, from years down; within int64 nanoseconds)
  { name: 'an alert duration with its units out of order', edit: (d) => { d.monitoring = { ...d.monitoring, alerts: { for: '30m1h' } }; }, path: 'monitoring.alerts.for', says: /got "30m1h": the units come once each, from y down to ms/ },
  { name: 'a scrape interval past the longest duration', edit: (d) => { d.monitoring = { ...d.monitoring, scrape: { interval: '300y' } }; }, path: 'monitoring.scrape.interval', says: /longer than the longest duration/ },
  { name: 'kubernetesVersion as a number', edit: (d) => { d.kubernetesVersion = 1.31; }, path: 'kubernetesVersion', says: /expected a Kubernetes minor version/ },
];

let dir: string;
let out: string;
const SENTINEL = 'previous render, must survive\n';

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'bad-descriptions-'));
  out = path.join(dir, 'out');
  mkdirSync(path.join(out, 'instant-cluster'), { recursive: true });
  writeFileSync(path.join(out, 'instant-cluster', 'sentinel.yaml'), SENTINEL);
});

function run(args: string[]): { code: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const code = main(args, { out: (l) => { stdout += `${l}\n`; }, err: (l) => { stderr += `${l}\n`; } }) as number; // synth is synchronous
  return { code, stdout, stderr };
}

describe('a broken description exits 2, names the field, and leaves the output untouched', () => {
  it('has at least 15 distinct cases', () => {
    expect(new Set(CASES.map((c) => c.path)).size).toBeGreaterThanOrEqual(15);
  });

  it.each(CASES)('$name -> $path', (c) => {
    const input = referenceInput();
    c.edit(input);
    const file = path.join(dir, `${c.name.replace(/\W+/g, '-')}.yaml`);
    writeFileSync(file, stringify(input));
    const r = run(['synth', '--config', file, '--out', out, '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    // one line per problem, each naming the file, the line and column of the field, its path, what is wrong
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.every((l) => l.startsWith(`${file}:`)), r.stderr).toBe(true);
    const line = lines.find((l) => new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+ ${c.path.replace(/[.[\]]/g, '\\$&')}: `).test(l));
    expect(line, r.stderr).toBeDefined();
    expect(line).toMatch(c.says);
    expect(r.stderr).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/); // no stack trace
    expect(r.stderr).not.toMatch(/\b[a-z]+\.\d+\./i); // one path notation: tenants[1].name, never tenants.1.name
    expect(readFileSync(path.join(out, 'instant-cluster', 'sentinel.yaml'), 'utf8')).toBe(SENTINEL);
  });

  it('names the line and column of the field as the YAML has it, suggests the field a typo meant, and echoes a refused value', () => {
    const file = path.join(dir, 'lab.yaml');
    const text = readFileSync(path.join(__dirname, '..', 'fixtures', 'descriptions', 'all-tainted.yaml'), 'utf8');
    const typo = text.replace('    gpusPerNode:', '    gpusPerNod:');
    const at = typo.split('\n').findIndex((l) => l.startsWith('    gpusPerNod:')) + 1;
    writeFileSync(file, typo);
    const r = run(['synth', '--config', file, '--out', out, '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toContain(`${file}:${at}:5 nodes.gpuWorkers.gpusPerNod: unknown field (did you mean "gpusPerNode"?)\n`);
    // a cross-field rule's message gets the value it refused
    const input = referenceInput();
    input.tenants[1].gpus = 10;
    writeFileSync(file, stringify(input));
    const over = run(['synth', '--config', file, '--out', out, '--no-validate']);
    expect(over.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^.*lab\.yaml:\d+:\d+ tenants\[1\]\.gpus: tenants claim 18 GPUs but the cluster has 16 .*, got 10$/)]);
  });

  it('reports YAML syntax errors with exit 2', () => {
    const file = path.join(dir, 'broken.yaml');
    writeFileSync(file, 'name: x\nnodes: [unclosed\n');
    const r = run(['synth', '--config', file, '--out', out, '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/invalid YAML/);
  });

  it('reports duplicate keys with exit 2', () => {
    const file = path.join(dir, 'dup.yaml');
    writeFileSync(file, `${readFileSync(REFERENCE_FILE, 'utf8')}\nname: again\n`);
    const r = run(['synth', '--config', file, '--out', out, '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/dup\.yaml:\d+:1 name: duplicate key "name" \(line \d+; first given on line 5\)/m);
  });

  it('reports a missing file and bad arguments with exit 2', () => {
    expect(run(['synth', '--config', path.join(dir, 'nope.yaml'), '--out', out]).code).toBe(EXIT.badInput);
    expect(run(['synth', '--bogus']).code).toBe(EXIT.badInput);
    expect(run(['frobnicate']).code).toBe(EXIT.badInput);
  });

  it('accepts JSON descriptions too', () => {
    const file = path.join(dir, 'as.json');
    const input = referenceInput();
    input.nodes.gpuWorkers.count = 'two';
    writeFileSync(file, JSON.stringify(input));
    const r = run(['synth', '--config', file, '--out', out, '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toContain('nodes.gpuWorkers.count: expected a positive integer, got "two"');
  });
});
