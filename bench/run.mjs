#!/usr/bin/env node
// Benchmark of the precompiled CLI (`npm run bench` compiles first, then runs this script).
// Every measurement is a fresh process, as a user or CI runs it; each case is repeated and the
// median reported. Prints a table and writes bench/results.json. See bench/README.md.
//
//   node bench/run.mjs [--quick] [--only ID[,ID...]] [--keep] [--readme]
//     --quick   one or two runs per case (a smoke test of the harness, not a measurement)
//     --only    run only these cases (ids as printed in the table)
//     --keep    keep the temporary folder (generated descriptions and outputs)
//     --readme  write the results table into bench/README.md (between its bench-results markers)
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'lib', 'src', 'bin.js');
const LAUNCHER = path.join(ROOT, 'projenrc', 'launch.cjs');
const CLUSTERS = path.join(ROOT, 'src', 'clusters');
const REFERENCE = path.join(CLUSTERS, 'instant-cluster.yaml');
const RESULTS = path.join(ROOT, 'bench', 'results.json');
const README = path.join(ROOT, 'bench', 'README.md');
const GNU_TIME = '/usr/bin/time';
const CACHE_ENV = 'GPU_CLUSTER_MANIFESTS_CACHE';

const TARGETS = {
  npmSynthWallSeconds: 1.0,
  npmBadInputWallSeconds: 1.0,
  referenceWallSeconds: 0.5,
  fleetWallSeconds: 10,
  fleetPeakRssMB: 500,
  // issue 22: a fleet of 1000 clusters in one synth, in linear time and bounded memory
  fleet1000WallSeconds: 20,
  fleet1000PeakRssMB: 600,
  fleet1000Over300MaxRatio: 3.6,
  speedupOverCdk8sTsNode: 5,
  /** What the engine-backed checks (helm and kustomize renders of every Application) add to `check` of the reference tree. */
  engineChecksReferenceSeconds: 3,
  // issue 30: check of the 1000-cluster fleet within 3x its synth, in one run, under 1 GB
  checkFleet1000OverSynthMaxRatio: 3,
  checkFleet1000PeakRssMB: 1024,
  // issue 30: the plain synth of a 1000-cluster repository, nothing changed / one description changed
  synthFleet1000NoopWallSeconds: 2,
  synthFleet1000OneChangedWallSeconds: 3,
  // issue 30: check of a 400-tenant cluster within 2x its synth
  checkTenantsOverSynthMaxRatio: 2,
  // issue 30: the two examples through npm (a full render into a temporary folder)
  npmSynthFullWallSeconds: 1.0,
  // issue 42: a MultiKueue fleet of 1 manager and 100 workers renders and checks within 2x the same 101 clusters without fleet.yaml
  multikueue101OverPlainMaxRatio: 2,
  // issue 30: the README's test command, whole (compile, vitest, type check, eslint), on a quiet machine
  npmTestWallSeconds: 240,
  // issue 41: upgrade-plan --component all of an example, warm
  upgradePlanAllWallSeconds: 20,
  // issue 53: one cluster rendered by the installed CLI in no more CPU than one helm template of the GPU Operator's chart
  synthOneOverHelmMaxCpuRatio: 1,
  // issue 53: the reference cluster through npm, end to end (a full render into a new folder)
  npmSynthReferenceWallSeconds: 1.5,
};

const { values: opts } = parseArgs({
  options: { quick: { type: 'boolean' }, only: { type: 'string' }, keep: { type: 'boolean' }, readme: { type: 'boolean' } },
});
const only = opts.only ? new Set(opts.only.split(',')) : undefined;
const runsOf = (n) => (opts.quick ? Math.min(n, 2) : n);

if (!existsSync(CLI)) {
  console.error(`${path.relative(process.cwd(), CLI)} is missing: run \`npm run bench\` (it compiles first) or \`npx tsc --build\`.`);
  process.exit(2);
}

const work = mkdtempSync(path.join(tmpdir(), 'gcm-bench-'));
// Outputs go to tmpfs where there is one, so the fleet cases measure the tool, not the disk.
const TMPFS = '/dev/shm';
const outRoot = (() => {
  try {
    return mkdtempSync(path.join(TMPFS, 'gcm-bench-out-'));
  } catch {
    return path.join(work, 'out');
  }
})();
const hasGnuTime = spawnSync(GNU_TIME, ['-f', '%M', 'true'], { encoding: 'utf8' }).status === 0;
const rssProbe = path.join(work, 'rss-probe.cjs');
// Fallback without GNU time: the child reports its own peak RSS when it exits.
writeFileSync(rssProbe, "process.on('exit', () => require('fs').writeFileSync(process.env.GCM_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS)));\n");

// ---------------------------------------------------------------- generated descriptions

/** Deterministic PRNG (mulberry32), so the generated fleet is the same on every machine. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const templates = readdirSync(CLUSTERS)
  .filter((f) => /\.ya?ml$/i.test(f))
  .sort()
  .map((f) => parse(readFileSync(path.join(CLUSTERS, f), 'utf8')));

/**
 * A description derived from one of the repository's own descriptions (so it stays valid as the
 * description schema grows), with its own name, worker count and tenants.
 */
function describeCluster(template, name, workers, tenantCount) {
  const d = structuredClone(template);
  d.name = name;
  if (d.gitops) d.gitops.path = `dist/${name}`;
  d.nodes.gpuWorkers.count = workers;
  if (d.samples?.nodeNames) delete d.samples.nodeNames;
  const capacity = workers * d.nodes.gpuWorkers.gpusPerNode;
  const quota = Math.floor((capacity * 0.9) / tenantCount);
  d.tenants = Array.from({ length: tenantCount }, (_, i) => ({ name: `team-${String(i + 1).padStart(2, '0')}`, gpus: quota }));
  return d;
}

function writeDescription(dir, d) {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${d.name}.yaml`);
  writeFileSync(file, stringify(d));
  return file;
}

const reference = templates.find((t) => t.name === 'instant-cluster') ?? templates[0];
const bigFile = writeDescription(path.join(work, 'big'), describeCluster(reference, 'big-cluster', 128, 50));

/** 100 clusters of mixed sizes: mostly small, some large (2 to 128 workers, 1 to 50 tenants). */
const random = prng(9);
const SIZES = [2, 2, 2, 4, 4, 8, 8, 16, 32, 64, 128];
const mixedFiles = Array.from({ length: 100 }, (_, i) => {
  const workers = SIZES[Math.floor(random() * SIZES.length)];
  const tenants = 1 + Math.floor(random() * Math.min(50, workers * 2));
  const template = templates[i % templates.length];
  return writeDescription(path.join(work, 'mixed'), describeCluster(template, `mixed-${String(i + 1).padStart(3, '0')}`, workers, tenants));
});

/**
 * A fleet of 1000 copies of the reference description that differ in name and gitops path only (issue
 * 22's measure of scale); each fleet case takes the first N.
 */
const FLEET_SIZE = 1000;
const fleetFiles = Array.from({ length: FLEET_SIZE }, (_, i) => {
  const d = structuredClone(reference);
  d.name = `cluster-${String(i + 1).padStart(4, '0')}`;
  d.gitops.path = `dist/${d.name}`;
  return writeDescription(path.join(work, 'fleet'), d);
});

/**
 * A clusters repository of the same 1000 descriptions (its project file: clusters/ into dist/), for the plain synth
 * of a large fleet: nothing changed, one description changed, and check of its output.
 */
const fleetProject = path.join(work, 'fleet-project');
mkdirSync(path.join(fleetProject, 'clusters'), { recursive: true });
writeFileSync(path.join(fleetProject, 'gpu-cluster-manifests.yaml'), 'clusters: clusters\nout: dist\n');
for (const f of fleetFiles) writeFileSync(path.join(fleetProject, 'clusters', path.basename(f)), readFileSync(f));
/** Each run of the one-changed case changes this description's first tenant quota (one GPU less, then back). */
const changedDescription = path.join(fleetProject, 'clusters', path.basename(fleetFiles[FLEET_SIZE / 2 - 1]));
/** check-fleet-1000 run on its own (`--only check-fleet-1000`): the repository's output is rendered first, unmeasured. */
const renderFleetProject = () => {
  if (!existsSync(path.join(fleetProject, 'dist'))) runOnce(process.execPath, [CLI, 'synth', '--quiet'], undefined, 0, fleetProject);
};
const changeOneDescription = (i) => {
  const d = parse(readFileSync(changedDescription, 'utf8'));
  const original = parse(readFileSync(fleetFiles[FLEET_SIZE / 2 - 1], 'utf8')).tenants[0].gpus;
  d.tenants[0].gpus = i % 2 === 0 ? original - 1 : original;
  writeFileSync(changedDescription, stringify(d));
};

/**
 * One cluster with N tenants of one GPU each on N/8 + 1 workers (issue 30's measure of tenancy): each tenant has its
 * namespace, quota, LocalQueue and bindings; the schema allows 500 tenants per cluster.
 */
function tenantsCluster(n) {
  const d = structuredClone(reference);
  d.name = `tenants-${n}`;
  d.gitops.path = `dist/${d.name}`;
  d.nodes.gpuWorkers.count = Math.floor(n / 8) + 1;
  if (d.samples?.nodeNames) delete d.samples.nodeNames;
  d.tenants = Array.from({ length: n }, (_, i) => ({ name: `team-${String(i + 1).padStart(4, '0')}`, gpus: 1 }));
  return writeDescription(path.join(work, 'tenants'), d);
}
/**
 * Issue 42's measure: a clusters repository of a MultiKueue manager and 100 workers (copies of the reference
 * description with five tenants each, the manager's tenants of gpus 0), each of the manager's six ClusterQueues
 * dispatching to 20 of them (a MultiKueueConfig holds at most 20); and the same 101 descriptions without fleet.yaml.
 */
const MK_WORKERS = 100;
const mkTenants = ['team-1', 'team-2', 'team-3', 'team-4', 'team-5'];
function multikueueRepository(name, withFleet) {
  const root = path.join(work, name);
  const clusters = path.join(root, 'clusters');
  mkdirSync(clusters, { recursive: true });
  writeFileSync(path.join(root, 'gpu-cluster-manifests.yaml'), 'clusters: clusters\nout: dist\n');
  const hub = structuredClone(reference);
  hub.name = 'hub';
  hub.gitops.path = 'dist/hub';
  hub.tenants = mkTenants.map((t) => ({ name: t, gpus: 0 }));
  if (hub.samples?.nodeNames) delete hub.samples.nodeNames;
  writeDescription(clusters, hub);
  const workers = Array.from({ length: MK_WORKERS }, (_, i) => `worker-${String(i + 1).padStart(3, '0')}`);
  for (const w of workers) writeDescription(clusters, { ...describeCluster(reference, w, 2, 1), tenants: mkTenants.map((t) => ({ name: t, gpus: 2 })) });
  if (withFleet) {
    const slice = (k) => workers.slice((k * 20) % MK_WORKERS, ((k * 20) % MK_WORKERS) + 20);
    const queues = Object.fromEntries(['default', ...mkTenants].map((q, k) => [q, slice(k)]));
    writeFileSync(path.join(clusters, 'fleet.yaml'), stringify({ multiKueue: { manager: 'hub', workers: workers.map((w) => ({ cluster: w, kubeconfigSecret: `multikueue-${w}` })), queues } }));
  }
  return root;
}
const multikueueProject = multikueueRepository('multikueue-101', true);
const plainProject = multikueueRepository('plain-101', false);

const tenants400 = tenantsCluster(400);
const tenants4000 = tenantsCluster(4000);

/** Issue 53: a clusters repository of the two examples' descriptions (the plain synth, answered by its record once rendered). */
const twoProject = path.join(work, 'two-project');
mkdirSync(path.join(twoProject, 'clusters'), { recursive: true });
writeFileSync(path.join(twoProject, 'gpu-cluster-manifests.yaml'), 'clusters: clusters\nout: dist\n');
const twoFiles = readdirSync(CLUSTERS).filter((f) => /\.ya?ml$/.test(f)).sort().slice(0, 2).map((f) => path.join(CLUSTERS, f));
for (const f of twoFiles) copyFileSync(f, path.join(twoProject, 'clusters', path.basename(f)));

/**
 * Issue 53's yardstick: `helm template` of the GPU Operator's chart at the pinned release, with the helm the checks run
 * (PATH's when recent enough, else the packaged one: lib/src/engines).
 */
async function helmTemplateOfGpuOperator() {
  const load = createRequire(import.meta.url);
  try {
    const { resolveEngines } = load(path.join(ROOT, 'lib', 'src', 'engines', 'engines.js'));
    const { VERSIONS } = load(path.join(ROOT, 'lib', 'src', 'versions.js'));
    const { DEFAULT_UPSTREAM } = load(path.join(ROOT, 'lib', 'src', 'paths.js'));
    const chart = path.join(DEFAULT_UPSTREAM, `gpu-operator-${VERSIONS.gpuOperator.version}`, 'deployments', 'gpu-operator');
    if (!existsSync(chart)) return undefined;
    return { command: (await resolveEngines()).helm.path, args: ['template', 'gpu-operator', chart] };
  } catch {
    return undefined;
  }
}
const helmTemplate = await helmTemplateOfGpuOperator();

// ---------------------------------------------------------------- measuring

const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Rendered objects under a folder, for the cases that print no count of their own: every YAML file but
 * the kustomizations (one object per file) and the client files under <cluster>/tutorials/ (no objects).
 */
function countObjects(dir) {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const where = path.relative(dir, e.parentPath ?? e.path).split(path.sep);
    if (where.includes('tutorials')) continue;
    if (e.isFile() && /\.ya?ml$/.test(e.name) && e.name !== 'kustomization.yaml') n += 1;
  }
  return n;
}

/** One fresh process: wall time (measured here), peak RSS, and the CLI's own timings (--format json). */
function runOnce(command, args, env, expectedStatus = 0, cwd = ROOT, expectOut = undefined) {
  const rssFile = path.join(work, `rss-${process.pid}-${Date.now()}`);
  let cmd = command;
  let argv = args;
  let childEnv = { ...process.env, CDK8S_CHECK_UPGRADE: 'false', ...env };
  if (hasGnuTime) {
    cmd = GNU_TIME;
    argv = ['-f', '%M %U %S', '-o', rssFile, command, ...args];
  } else if (command === process.execPath) {
    argv = ['--require', rssProbe, ...args];
    childEnv = { ...childEnv, GCM_BENCH_RSS_FILE: rssFile };
  }
  const t0 = performance.now();
  const r = spawnSync(cmd, argv, { cwd, env: childEnv, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const wall = performance.now() - t0;
  if (Array.isArray(expectedStatus) ? !expectedStatus.includes(r.status) : r.status !== expectedStatus) {
    throw new Error(`${[command, ...args].join(' ')} exited ${r.status} (expected ${expectedStatus})\n${(r.stderr || '').slice(-4000)}`);
  }
  // a case that measures something else than it says (a full render where an incremental one was meant) fails
  if (expectOut && !expectOut.test(`${r.stdout}${r.stderr}`)) {
    throw new Error(`${[command, ...args].join(' ')}: the output does not match ${expectOut}\n${`${r.stdout}${r.stderr}`.slice(-2000)}`);
  }
  // GNU time: "maxRSS-KB user-s sys-s"; the probe: "maxRSS-KB".
  let rssKB;
  let cpu;
  if (existsSync(rssFile)) {
    const [rss, user, sys] = readFileSync(rssFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
    rssKB = Number.isFinite(rss) ? rss : undefined;
    cpu = Number.isFinite(user) && Number.isFinite(sys) ? (user + sys) * 1000 : undefined;
    rmSync(rssFile, { force: true });
  }
  let timings;
  // synth prints its JSON report on one (the last) line, check pretty-prints a whole document
  const text = r.stdout.trim();
  const last = text.startsWith('{') ? text : text.split('\n').pop() ?? '';
  let objects;
  let renders;
  if (last.startsWith('{')) {
    try {
      ({ timings, objects, renders } = JSON.parse(last));
    } catch {
      timings = undefined;
    }
  }
  return { wall, rssKB, cpu, timings, objects, renders };
}

const cli = (...args) => ({ command: process.execPath, args: [CLI, ...args] });
const launcher = (...args) => ({ command: process.execPath, args: [LAUNCHER, ...args] });
const npmRun = (script, ...args) => ({ command: 'npm', args: ['run', script, '--', ...args] });
const nothingPackage = path.join(work, 'nothing');
mkdirSync(nothingPackage);
writeFileSync(path.join(nothingPackage, 'package.json'), `${JSON.stringify({ name: 'nothing', version: '1.0.0', private: true, scripts: { nothing: 'node -e 0' } })}\n`);
const broken = path.join(work, 'broken.yaml');
writeFileSync(broken, readFileSync(REFERENCE, 'utf8').replace(/gpusPerNode: \d+/, 'gpusPerNode: eight'));

const results = [];

function measure(c) {
  if (only && !only.has(c.id)) return undefined;
  const runs = runsOf(c.runs);
  process.stdout.write(`${c.id.padEnd(22)} ${runs} run(s) `);
  const samples = [];
  for (let i = 0; i < runs + (c.warmup ?? 1); i += 1) {
    const env = typeof c.env === 'function' ? c.env(i) : c.env;
    c.before?.(i);
    const s = runOnce(c.command, c.args, env, c.status, c.cwd, i >= (c.warmup ?? 1) ? c.expect : undefined);
    // The first run of a warm case fills the disk cache and the page cache: not measured.
    if (i >= (c.warmup ?? 1)) samples.push(s);
    process.stdout.write('.');
  }
  // the CLI's own count (synth --format json), else the object files written
  const objects = samples.find((x) => typeof x.objects === 'number')?.objects ?? (c.objectsDir ? countObjects(c.objectsDir) : undefined);
  const t = (k) => median(samples.map((s) => s.timings?.[k]));
  const walls = samples.map((s) => s.wall);
  const result = {
    id: c.id,
    title: c.title,
    ...(c.cwd ? { cwd: c.cwd.startsWith(work) ? `$TMP${c.cwd.slice(work.length)}` : c.cwd } : {}),
    command: [c.command === process.execPath ? 'node' : c.command, ...c.args.map((a) => (a.startsWith(work) ? `$TMP${a.slice(work.length)}` : path.isAbsolute(a) ? path.relative(ROOT, a) : a))].join(' '),
    runs,
    objects,
    wallMs: median(walls),
    wallMinMs: Math.min(...walls),
    wallMaxMs: Math.max(...walls),
    cpuMs: median(samples.map((s) => s.cpu)),
    peakRssMB: median(samples.map((s) => (s.rssKB === undefined ? undefined : s.rssKB / 1024))),
    // In-process phases reported by the CLI (--format json): load = descriptions -> models.
    loadMs: t('load'),
    renderMs: t('render'),
    validateMs: t('validate'),
    writeMs: t('write'),
    totalMs: t('total'),
    // check: the engine renders of every Application source (helm template, kustomize build), and the rules
    ...(c.args.includes('check') ? { engineRenderMs: t('render'), rulesMs: t('rules'), renderMs: undefined } : {}),
    // check: where the renders came from, by kind (engine runs, the cache, the run's own), in the last run
    ...(samples.at(-1)?.renders ? { renders: samples.at(-1).renders } : {}),
  };
  results.push(result);
  process.stdout.write(` ${(result.wallMs / 1000).toFixed(2)} s\n`);
  return result;
}

const out = (name) => path.join(outRoot, name);
function removeWork() {
  rmSync(work, { recursive: true, force: true });
  rmSync(outRoot, { recursive: true, force: true });
}
const freshCache = (i) => ({ [CACHE_ENV]: path.join(work, 'cold-cache', String(i)) });
/** A fresh cache folder whose engines are already unpacked (the case measures the renders, not the unpacking). */
const freshRenderCache = (i) => {
  const dir = path.join(work, 'cold-renders', String(i));
  mkdirSync(dir, { recursive: true });
  const engines = path.join(ROOT, 'node_modules', '.cache', 'gpu-cluster-manifests', 'engines');
  if (existsSync(engines)) symlinkSync(engines, path.join(dir, 'engines'));
  return { [CACHE_ENV]: dir };
};
const configArgs = (files, name) => [...files.flatMap((f) => ['--config', f]), '--out', out(name), '--format', 'json'];
const fleetArgs = (n, name) => configArgs(fleetFiles.slice(0, n), name);

const startLoad = loadavg();
console.log(`gpu-cluster-manifests benchmark: ${cpus().length} CPUs, node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`temporary folder: ${work}, outputs in ${outRoot}${hasGnuTime ? '' : ' (no /usr/bin/time: peak RSS reported by the node children only)'}\n`);

const CASES = [
  // issue 53: the start of the installed CLI (lib/src/bin.js, as npx and the npm bin run it), then one and two clusters
  { id: 'version', title: 'gpu-cluster-manifests --version (the entry point alone)', runs: 7, ...cli('--version') },
  ...(helmTemplate ? [{ id: 'helm-gpu-operator', title: 'baseline: helm template of the GPU Operator chart at the pinned release', runs: 7, ...helmTemplate }] : []),
  {
    id: 'synth-1', title: 'synth of the reference cluster into a new folder (render, validate, check, write)', runs: 9,
    ...cli('synth', '--config', REFERENCE, '--out', out('synth-1'), '--format', 'json'), objectsDir: out('synth-1'), before: () => rmSync(out('synth-1'), { recursive: true, force: true }),
  },
  {
    id: 'synth-2', title: 'synth of the two examples\' descriptions into a new folder', runs: 7,
    ...cli('synth', ...configArgs(twoFiles, 'synth-2')), objectsDir: out('synth-2'), before: () => rmSync(out('synth-2'), { recursive: true, force: true }),
  },
  {
    id: 'synth-2-up-to-date', title: 'plain synth of a repository of those two, nothing changed (its record answers)', runs: 7,
    ...cli('synth'), cwd: twoProject, expect: /already up to date \(\d+ files\): no description/, objectsDir: path.join(twoProject, 'dist'),
  },
  {
    id: 'npm-synth-reference', title: 'npm run synth -- --config <reference> --out DIR: the reference cluster end to end, into a new folder', runs: 7,
    ...npmRun('synth', '--config', REFERENCE, '--out', out('npm-synth-reference')), objectsDir: out('npm-synth-reference'),
    before: () => rmSync(out('npm-synth-reference'), { recursive: true, force: true }),
  },
  {
    id: 'reference', title: 'reference cluster: render + validate + write', runs: 9,
    ...cli('synth', '--config', REFERENCE, '--out', out('reference'), '--format', 'json'), objectsDir: out('reference'),
  },
  {
    id: 'reference-no-validate', title: 'reference cluster: render + write (--no-validate)', runs: 7,
    ...cli('synth', '--config', REFERENCE, '--out', out('reference-nv'), '--no-validate', '--format', 'json'), objectsDir: out('reference-nv'),
  },
  {
    id: 'reference-cold-cache', title: 'reference cluster, empty validator cache (first run after npm ci)', runs: 3, warmup: 0,
    ...cli('synth', '--config', REFERENCE, '--out', out('reference-cold'), '--format', 'json'), env: freshCache, objectsDir: out('reference-cold'),
  },
  {
    id: 'check-reference', title: 'check of the written reference tree, every Application rendered with helm/kustomize (warm render cache)', runs: 5,
    ...cli('check', out('reference'), '--config', REFERENCE, '--format', 'json'), objectsDir: out('reference'),
  },
  {
    id: 'check-reference-cold', title: 'the same with an empty render cache (engines already unpacked)', runs: 3, warmup: 0,
    ...cli('check', out('reference'), '--config', REFERENCE, '--format', 'json'), env: freshRenderCache, objectsDir: out('reference'),
  },
  {
    id: 'validate-reference', title: 'validate the written reference tree (reads YAML)', runs: 5,
    ...cli('validate', '--quiet', out('reference')), objectsDir: out('reference'),
  },
  {
    id: 'big-128w-50t', title: '128 workers, 50 tenants', runs: 5,
    ...cli('synth', '--config', bigFile, '--out', out('big'), '--format', 'json'), objectsDir: out('big'),
  },
  ...[1, 10, 100, 300, 1000].map((n) => ({
    id: `fleet-${n}`, title: `fleet: ${n} copies of the reference cluster (name and gitops path differ)`, runs: n >= 300 ? 3 : 5,
    ...cli('synth', ...fleetArgs(n, `fleet-${n}`)), objectsDir: out(`fleet-${n}`),
  })),
  // issue 30: a 1000-cluster repository's plain synth (the launcher's up-to-date record), and check of its output
  {
    id: 'synth-fleet-1000-noop', title: 'plain synth of a 1000-cluster repository, nothing changed (the warm-up run renders it)', runs: 3,
    ...cli('synth'), cwd: fleetProject, expect: /already up to date \(\d+ files\): no description/, objectsDir: path.join(fleetProject, 'dist'),
  },
  {
    id: 'synth-fleet-1000-one-changed', title: 'plain synth of a 1000-cluster repository, one description changed (a tenant quota)', runs: 3, warmup: 0,
    ...cli('synth'), cwd: fleetProject, before: changeOneDescription, expect: /1000 cluster folders and fleet\/ \(1 replaced, 1000 unchanged\)/,
    objectsDir: path.join(fleetProject, 'dist'),
  },
  {
    id: 'check-fleet-1000', title: 'check of the 1000-cluster repository\'s output with its descriptions (one run: each distinct engine input rendered once)', runs: 1,
    ...cli('check', '--format', 'json'), cwd: fleetProject, before: renderFleetProject, objectsDir: path.join(fleetProject, 'dist'),
  },
  // issue 42: a MultiKueue fleet of 1 manager and 100 workers against the same 101 clusters without fleet.yaml
  ...[['plain-101', plainProject, 'the same 101 clusters without fleet.yaml'], ['multikueue-101', multikueueProject, 'MultiKueue: a manager and 100 workers (fleet.yaml)']]
    .flatMap(([id, root, what]) => [
      {
        id: `synth-${id}`, title: `synth of a repository of ${what}, into a new folder`, runs: 3,
        ...cli('synth', '--out', path.join(root, 'out'), '--format', 'json'), cwd: root, objectsDir: path.join(root, 'out'),
        before: () => rmSync(path.join(root, 'out'), { recursive: true, force: true }),
      },
      {
        id: `check-${id}`, title: `check of that output with its descriptions (warm render cache)`, runs: 3,
        ...cli('check', path.join(root, 'out'), '--format', 'json'), cwd: root, objectsDir: path.join(root, 'out'),
        before: () => {
          if (!existsSync(path.join(root, 'out'))) runOnce(process.execPath, [CLI, 'synth', '--out', path.join(root, 'out'), '--quiet'], undefined, 0, root);
        },
      },
    ]),
  // issue 30: tenancy at scale
  {
    id: 'synth-tenants-400', title: 'one cluster, 400 tenants of one GPU each (51 workers)', runs: 3,
    ...cli('synth', '--config', tenants400, '--out', out('tenants-400'), '--format', 'json'), objectsDir: out('tenants-400'),
  },
  {
    id: 'check-tenants-400', title: 'check of that cluster with its description', runs: 2,
    ...cli('check', out('tenants-400'), '--config', tenants400, '--format', 'json'), objectsDir: out('tenants-400'),
  },
  {
    id: 'synth-tenants-4000', title: 'one cluster, 4000 tenants: refused by the schema (at most 500 per cluster), exit 2', runs: 3, status: 2,
    ...cli('synth', '--config', tenants4000, '--out', out('tenants-4000')), expect: /tenants: .*at most 500/,
  },
  { id: 'mixed-100', title: '100 clusters of mixed sizes (2-128 workers, 1-50 tenants)', runs: 3, ...cli('synth', ...configArgs(mixedFiles, 'mixed-100')), objectsDir: out('mixed-100') },
  {
    id: 'repo-clusters', title: 'every description in src/clusters (npm run synth, into a temp dir)', runs: 5,
    ...cli('synth', '--out', out('repo'), '--format', 'json'), objectsDir: out('repo'),
  },
  {
    id: 'check-repo', title: 'check of every description in src/clusters: the training cluster\'s managed installs rendered (warm)', runs: 3,
    ...cli('check', out('repo'), '--format', 'json'), objectsDir: out('repo'),
  },
  // issue 41: upgrade-plan --component all of each example, warm: both releases' charts rendered from the cache. Exit 1 is
  // a plan with a blocker (a pre-installed operator whose new CRs need its new CRDs first), 2 or a crash is no plan.
  ...readdirSync(CLUSTERS).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => ({
    id: `upgrade-plan-${f.replace(/\.ya?ml$/, '')}`, title: `upgrade-plan --component all --config src/clusters/${f} (warm)`, runs: 3, status: [0, 1],
    ...cli('upgrade-plan', '--config', path.join(CLUSTERS, f), '--component', 'all', '--format', 'json'),
  })),
  // End to end, as the README documents it: npm, the launcher's "compiled already?" check, the CLI.
  // `npm run synth` exactly as documented (into dist/): warm, nothing changed, so the launcher's
  // up-to-date check answers without loading the CLI (a stale dist/ is re-rendered by the warm-up run).
  {
    id: 'npm-synth-repo', title: 'npm run synth as documented (dist/, warm: up to date)', runs: 5,
    ...npmRun('synth'), objectsDir: path.join(ROOT, 'dist'),
  },
  {
    id: 'launcher-synth-repo', title: 'the same without npm: node projenrc/launch.cjs synth', runs: 5,
    ...launcher('synth'), objectsDir: path.join(ROOT, 'dist'),
  },
  // a fresh render: each run into a folder that does not exist yet (into the same folder, a run after the first
  // finds every file in place and writes nothing)
  {
    id: 'npm-synth', title: 'npm run synth: every description in src/clusters + fleet (into a new temp dir)', runs: 7,
    ...npmRun('synth', '--out', out('npm-synth')), objectsDir: out('npm-synth'), before: () => rmSync(out('npm-synth'), { recursive: true, force: true }),
  },
  {
    id: 'launcher-synth', title: 'the same without npm: node projenrc/launch.cjs synth', runs: 7,
    ...launcher('synth', '--out', out('launcher-synth')), objectsDir: out('launcher-synth'), before: () => rmSync(out('launcher-synth'), { recursive: true, force: true }),
  },
  // what any command through npm costs on this machine at this moment, before the toolkit runs a line: npm's run of
  // a script that does nothing, and node's own start (NODE_EXTRA_CA_CERTS, when set, is read and parsed by both)
  {
    id: 'npm-run-nothing', title: 'baseline: npm run -s of a script that does nothing (npm and node start)', runs: 7,
    command: 'npm', args: ['run', '-s', 'nothing'], cwd: nothingPackage,
  },
  {
    id: 'node-start', title: 'baseline: node -e 0', runs: 7, command: process.execPath, args: ['-e', '0'],
  },
  {
    id: 'npm-bad-input', title: 'npm run synth -- --config BROKEN (exit 2)', runs: 5, status: 2,
    ...npmRun('synth', '--config', broken, '--out', out('npm-bad')),
  },
  {
    id: 'launcher-bad-input', title: 'the same without npm (exit 2)', runs: 5, status: 2,
    ...launcher('synth', '--config', broken, '--out', out('launcher-bad')),
  },
  {
    id: 'cdk8s-ts-node', title: 'baseline: npx cdk8s synth, app via ts-node (same clusters as repo-clusters)', runs: 3,
    command: 'npx', args: ['cdk8s', 'synth', '--app', 'npx ts-node --transpile-only src/main.ts', '--output', out('cdk8s')], objectsDir: out('cdk8s'),
  },
  // last, so that nothing of the benchmark runs beside it: the suite is bound by the CPU of both cores
  {
    id: 'npm-test', title: 'npm test, as CI runs it (CI=true): compile, every test file, type check, eslint', runs: 1, warmup: 0,
    command: 'npm', args: ['test'], env: { CI: 'true' }, expect: /Test Files .*passed/,
  },
];

try {
  for (const c of CASES) measure(c);
} catch (e) {
  console.error(`\nbenchmark failed: ${e.message}`);
  if (!opts.keep) removeWork();
  process.exit(1);
}

// ---------------------------------------------------------------- report

const byId = Object.fromEntries(results.map((r) => [r.id, r]));
const fmtS = (ms) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(2)}`);
const fmtMs = (ms) => (ms === undefined ? '-' : `${ms.toFixed(0)}`);
const perSec = (n, ms) => (n === undefined || ms === undefined || ms <= 0 ? '-' : `${Math.round((n * 1000) / ms)}`);
const renderOf = (r) => (r.loadMs === undefined ? undefined : r.loadMs + r.renderMs);

const header = ['case', 'runs', 'objects', 'wall s (min-max)', 'cpu s', 'RSS MB', 'obj/s', 'render ms', 'render obj/s', 'validate ms', 'validate obj/s', 'write ms'];
const rows = results.map((r) => [
  r.id,
  String(r.runs),
  r.objects === undefined ? '-' : String(r.objects),
  `${fmtS(r.wallMs)} (${fmtS(r.wallMinMs)}-${fmtS(r.wallMaxMs)})`,
  fmtS(r.cpuMs),
  r.peakRssMB === undefined ? '-' : r.peakRssMB.toFixed(0),
  perSec(r.objects, r.wallMs),
  fmtMs(renderOf(r)),
  perSec(r.objects, renderOf(r)),
  fmtMs(r.validateMs),
  r.validateMs ? perSec(r.objects, r.validateMs) : '-',
  fmtMs(r.writeMs),
]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
console.log(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
for (const row of rows) console.log(line(row));
console.log('\nwall = whole command in a fresh process (median); cpu = its user + system CPU time (less sensitive to other load);');
console.log('render = load descriptions + build models + synth in memory; validate = strict schema validation of every object');
console.log('(and the cross-object checks); write = YAML + files. Phases are in-process, reported by the CLI (--format json).');

// Linearity: cost per object as the fleet grows (in-process phases, and wall).
const linearity = ['fleet-1', 'fleet-10', 'fleet-100', 'fleet-300', 'fleet-1000'].filter((id) => byId[id]?.objects).map((id) => {
  const r = byId[id];
  return {
    id,
    clusters: Number(id.split('-')[1]),
    objects: r.objects,
    renderMsPerObject: renderOf(r) / r.objects,
    validateMsPerObject: r.validateMs / r.objects,
    writeMsPerObject: r.writeMs / r.objects,
    wallMsPerObject: r.wallMs / r.objects,
  };
});
if (linearity.length > 0) {
  console.log('\ncost per object (ms) as the fleet grows');
  console.log('clusters  objects  render  validate  write   wall');
  for (const l of linearity) {
    console.log(`${String(l.clusters).padStart(8)}  ${String(l.objects).padStart(7)}  ${l.renderMsPerObject.toFixed(3).padStart(6)}  ${l.validateMsPerObject.toFixed(3).padStart(8)}  ${l.writeMsPerObject.toFixed(3).padStart(5)}  ${l.wallMsPerObject.toFixed(3).padStart(5)}`);
  }
  const [a, b] = [byId['fleet-10'], byId['fleet-100']];
  if (a?.objects && b?.objects && b.objects > a.objects) {
    console.log(`marginal wall cost from 10 to 100 clusters: ${((b.wallMs - a.wallMs) / (b.objects - a.objects)).toFixed(3)} ms per object`);
  }
  const [c, d] = [byId['fleet-300'], byId['fleet-1000']];
  if (c?.objects && d?.objects && d.objects > c.objects) {
    console.log(`marginal wall cost from 300 to 1000 clusters: ${((d.wallMs - c.wallMs) / (d.objects - c.objects)).toFixed(3)} ms per object`);
  }
}

// Targets.
const checks = [];
const check = (name, ok, detail) => {
  checks.push({ name, ok, detail });
};
for (const [id, launched, target] of [['npm-synth-repo', 'launcher-synth-repo', TARGETS.npmSynthWallSeconds], ['npm-bad-input', 'launcher-bad-input', TARGETS.npmBadInputWallSeconds]]) {
  const r = byId[id];
  if (!r) continue;
  const without = byId[launched];
  const overhead = without ? `; npm itself ${fmtS(r.wallMs - without.wallMs)} s, the launcher + CLI ${fmtS(without.wallMs)} s` : '';
  check(`${r.command.replace(/ -- .*/, '')}${id === 'npm-bad-input' ? ' (bad input)' : ''} <= ${target} s wall`, r.wallMs <= target * 1000, `${fmtS(r.wallMs)} s${overhead}`);
}
if (byId.reference) check(`reference cluster <= ${TARGETS.referenceWallSeconds} s wall`, byId.reference.wallMs <= TARGETS.referenceWallSeconds * 1000, `${fmtS(byId.reference.wallMs)} s`);
if (byId['mixed-100']) {
  const f = byId['mixed-100'];
  check(`100 clusters of mixed sizes <= ${TARGETS.fleetWallSeconds} s wall`, f.wallMs <= TARGETS.fleetWallSeconds * 1000, `${fmtS(f.wallMs)} s`);
  if (f.peakRssMB !== undefined) check(`100 clusters of mixed sizes < ${TARGETS.fleetPeakRssMB} MB peak RSS`, f.peakRssMB < TARGETS.fleetPeakRssMB, `${f.peakRssMB.toFixed(0)} MB`);
}
if (byId['fleet-1000']) {
  const f = byId['fleet-1000'];
  check(`1000-cluster fleet <= ${TARGETS.fleet1000WallSeconds} s wall`, f.wallMs <= TARGETS.fleet1000WallSeconds * 1000, `${fmtS(f.wallMs)} s`);
  if (f.peakRssMB !== undefined) check(`1000-cluster fleet < ${TARGETS.fleet1000PeakRssMB} MB peak RSS`, f.peakRssMB < TARGETS.fleet1000PeakRssMB, `${f.peakRssMB.toFixed(0)} MB`);
  const f300 = byId['fleet-300'];
  if (f300) {
    const ratio = f.wallMs / f300.wallMs;
    check(`t(1000)/t(300) <= ${TARGETS.fleet1000Over300MaxRatio} (1000/300 = 3.33 when linear)`, ratio <= TARGETS.fleet1000Over300MaxRatio, `${ratio.toFixed(2)} (${fmtS(f.wallMs)} s / ${fmtS(f300.wallMs)} s)`);
  }
}
for (const id of ['reference', 'fleet-100']) {
  const r = byId[id];
  if (r?.validateMs !== undefined) check(`${id}: validation <= rendering`, r.validateMs <= renderOf(r), `validate ${fmtMs(r.validateMs)} ms, render ${fmtMs(renderOf(r))} ms`);
}
if (byId['cdk8s-ts-node'] && byId['repo-clusters']) {
  const speedup = byId['cdk8s-ts-node'].wallMs / byId['repo-clusters'].wallMs;
  check(`>= ${TARGETS.speedupOverCdk8sTsNode}x faster than cdk8s synth via ts-node`, speedup >= TARGETS.speedupOverCdk8sTsNode, `${speedup.toFixed(1)}x (${fmtS(byId['cdk8s-ts-node'].wallMs)} s vs ${fmtS(byId['repo-clusters'].wallMs)} s)`);
}
for (const kind of ['synth', 'check']) {
  const mk = byId[`${kind}-multikueue-101`];
  const plain = byId[`${kind}-plain-101`];
  if (mk && plain) {
    check(`${kind}-multikueue-101 <= ${TARGETS.multikueue101OverPlainMaxRatio}x ${kind}-plain-101 (issue 42)`, mk.wallMs <= TARGETS.multikueue101OverPlainMaxRatio * plain.wallMs,
      `${(mk.wallMs / plain.wallMs).toFixed(2)}x (${fmtS(mk.wallMs)} s / ${fmtS(plain.wallMs)} s)`);
  }
}
if (byId['check-fleet-1000']) {
  const c = byId['check-fleet-1000'];
  const s = byId['fleet-1000'];
  if (s) check(`check-fleet-1000 <= ${TARGETS.checkFleet1000OverSynthMaxRatio}x synth of the same fleet (fleet-1000)`, c.wallMs <= TARGETS.checkFleet1000OverSynthMaxRatio * s.wallMs, `${(c.wallMs / s.wallMs).toFixed(2)}x (${fmtS(c.wallMs)} s / ${fmtS(s.wallMs)} s)`);
  if (c.peakRssMB !== undefined) check(`check-fleet-1000 < ${TARGETS.checkFleet1000PeakRssMB} MB peak RSS`, c.peakRssMB < TARGETS.checkFleet1000PeakRssMB, `${c.peakRssMB.toFixed(0)} MB`);
  if (c.renders) {
    const kinds = Object.entries(c.renders).filter(([, n]) => n.runs + n.cached + n.shared > 0);
    console.log(`check-fleet-1000 renders (engine runs / from the cache / shared in the run): ${kinds.map(([k, n]) => `${k} ${n.runs}/${n.cached}/${n.shared}`).join(', ')}`);
  }
}
for (const [id, target] of [['synth-fleet-1000-noop', TARGETS.synthFleet1000NoopWallSeconds], ['synth-fleet-1000-one-changed', TARGETS.synthFleet1000OneChangedWallSeconds]]) {
  const r = byId[id];
  if (r) check(`${id} <= ${target} s wall`, r.wallMs <= target * 1000, `${fmtS(r.wallMs)} s (cpu ${fmtS(r.cpuMs)} s)`);
}
if (byId['check-tenants-400'] && byId['synth-tenants-400']) {
  const [c, s] = [byId['check-tenants-400'], byId['synth-tenants-400']];
  check(`check-tenants-400 <= ${TARGETS.checkTenantsOverSynthMaxRatio}x its synth`, c.wallMs <= TARGETS.checkTenantsOverSynthMaxRatio * s.wallMs, `${(c.wallMs / s.wallMs).toFixed(2)}x (${fmtS(c.wallMs)} s / ${fmtS(s.wallMs)} s)`);
}
for (const r of results.filter((x) => x.id.startsWith('upgrade-plan-'))) {
  check(`${r.id} <= ${TARGETS.upgradePlanAllWallSeconds} s wall (warm)`, r.wallMs <= TARGETS.upgradePlanAllWallSeconds * 1000, `${fmtS(r.wallMs)} s (cpu ${fmtS(r.cpuMs)} s)`);
}
if (byId['npm-test']) {
  const r = byId['npm-test'];
  check(`npm test <= ${TARGETS.npmTestWallSeconds} s wall`, r.wallMs <= TARGETS.npmTestWallSeconds * 1000, `${fmtS(r.wallMs)} s (cpu ${fmtS(r.cpuMs)} s)`);
}
if (byId['npm-synth']) {
  const r = byId['npm-synth'];
  const nothing = byId['npm-run-nothing'];
  const fixed = nothing ? `; npm and node alone ${fmtS(nothing.wallMs)} s, node alone ${fmtS(byId['node-start']?.wallMs ?? NaN)} s` : '';
  check(`npm run synth -- --out DIR (a full render of the examples) <= ${TARGETS.npmSynthFullWallSeconds} s wall`, r.wallMs <= TARGETS.npmSynthFullWallSeconds * 1000, `${fmtS(r.wallMs)} s (cpu ${fmtS(r.cpuMs)} s${fixed})`);
}
if (byId['synth-1'] && byId['helm-gpu-operator']) {
  const [r, helm] = [byId['synth-1'], byId['helm-gpu-operator']];
  check(`synth-1 (one cluster, the installed CLI) <= ${TARGETS.synthOneOverHelmMaxCpuRatio}x the CPU of one helm template of the GPU Operator chart (issue 53)`, r.cpuMs <= TARGETS.synthOneOverHelmMaxCpuRatio * helm.cpuMs,
    `${(r.cpuMs / helm.cpuMs).toFixed(2)}x (cpu ${fmtS(r.cpuMs)} s / ${fmtS(helm.cpuMs)} s)`);
}
if (byId['npm-synth-reference']) {
  const r = byId['npm-synth-reference'];
  check(`npm run synth of the reference cluster (end to end) <= ${TARGETS.npmSynthReferenceWallSeconds} s wall (issue 53)`, r.wallMs <= TARGETS.npmSynthReferenceWallSeconds * 1000, `${fmtS(r.wallMs)} s (cpu ${fmtS(r.cpuMs)} s)`);
}
const engineRows = results.filter((r) => r.engineRenderMs !== undefined);
if (engineRows.length > 0) {
  console.log('\nengine-backed checks (check --format json timings): render = helm template / kustomize build of every Application source');
  for (const r of engineRows) console.log(`  ${r.id.padEnd(22)} render ${fmtMs(r.engineRenderMs).padStart(6)} ms   rules ${fmtMs(r.rulesMs).padStart(5)} ms   wall ${fmtS(r.wallMs)} s`);
}
for (const id of ['check-reference', 'check-reference-cold']) {
  const r = byId[id];
  if (r?.engineRenderMs !== undefined) {
    check(`${id}: engine renders add <= ${TARGETS.engineChecksReferenceSeconds} s`, r.engineRenderMs <= TARGETS.engineChecksReferenceSeconds * 1000, `${fmtS(r.engineRenderMs)} s`);
  }
}
if (checks.length > 0) {
  console.log('\ntargets');
  for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'MISS'}  ${c.name}: ${c.detail}`);
}

const report = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryMB: Math.round(totalmem() / 2 ** 20), loadAverage: loadavg(), node: process.version },
  peakRssSource: hasGnuTime ? '/usr/bin/time %M (largest process of the command)' : 'process.resourceUsage().maxRSS of node children',
  quick: Boolean(opts.quick),
  targets: TARGETS,
  results,
  linearity,
  checks,
};
writeFileSync(RESULTS, `${JSON.stringify(report, undefined, 2)}\n`);
console.log(`\nwrote ${path.relative(process.cwd(), RESULTS)}`);
if (opts.readme) {
  writeReadme(report);
  console.log(`wrote the results into ${path.relative(process.cwd(), README)}`);
}

/**
 * The results section of bench/README.md, from this run: every figure (objects included) is what the
 * harness measured and counted, never typed in.
 */
function writeReadme(r) {
  const start = '<!-- bench-results:start -->';
  const end = '<!-- bench-results:end -->';
  const text = readFileSync(README, 'utf8');
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new Error(`${README}: no ${start} ... ${end} section`);
  const load = (l) => l.map((x) => x.toFixed(1)).join(' ');
  const fmt = (ms) => (ms === undefined ? '-' : (ms / 1000).toFixed(2));
  const ms = (v) => (v === undefined ? '-' : v.toFixed(0));
  const lines = [
    start,
    `Measured ${r.date.slice(0, 10)} by \`npm run bench -- --readme\`${r.quick ? ' --quick' : ''}: ${r.machine.cpus} CPUs (${r.machine.cpuModel}), Node ${r.machine.node.slice(1)}, `
      + `load average ${load(startLoad)} at the start and ${load(r.machine.loadAverage)} at the end (other engineers share the machine: compare \`cpu\`). Medians; outputs on ${outRoot.startsWith(TMPFS) ? 'tmpfs' : 'disk'}.`,
    '',
    '| case | runs | objects | wall s | cpu s | RSS MB | render ms | validate ms | write ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...r.results.map((x) => `| \`${x.id}\` | ${x.runs} | ${x.objects ?? '-'} | ${fmt(x.wallMs)} | ${fmt(x.cpuMs)} | ${x.peakRssMB === undefined ? '-' : x.peakRssMB.toFixed(0)} | `
      + `${ms(x.loadMs === undefined ? undefined : x.loadMs + x.renderMs)} | ${ms(x.validateMs)} | ${ms(x.writeMs)} |`),
    '',
    ...(r.checks.length > 0 ? ['Targets:', '', ...r.checks.map((c) => `- ${c.ok ? 'met' : '**missed**'}: ${c.name}: ${c.detail}`), ''] : []),
    end,
  ];
  writeFileSync(README, `${text.slice(0, i)}${lines.join('\n')}${text.slice(j + end.length)}`);
}
if (opts.keep) console.log(`kept ${work} and ${outRoot}`);
else removeWork();
