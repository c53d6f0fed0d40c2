import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { loadModels } from '../../src/model/load-models';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { formatPlan, SUMMARY_WIDTH } from '../../src/upgrade/format';
import { PlanResult, planUpgrade } from '../../src/upgrade/plan';
import { Finding } from '../../src/upgrade/types';
import { PREVIOUS_RELEASES } from '../../src/upstream/previous-releases';
import { GPU_OPERATOR_CHART, KUEUE_CHART, NETWORK_OPERATOR_CHART } from '../../src/upstream/releases';
import { VERSIONS } from '../../src/versions';
import { HAS_UPSTREAM, ROOT, runCliInProcess, TRAINING_FILE } from '../helpers';

/*
 * upgrade-plan against the vendored releases (../shared/upstream-installs: the previous and the pinned ones) with the
 * real engines. The facts the assertions compare with are read from the vendored trees; the counts asserted as
 * numbers are facts of those trees that issue 41 states (13 relaxed requirements, 20 fields added, ...).
 */

const work = mkdtempSync(path.join(tmpdir(), 'upgrade-plan-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const PAIR = path.join(ROOT, 'test', 'fixtures', 'upgrade', 'crd-pair');

const previous = (chart: { folder: string }) => PREVIOUS_RELEASES.find((p) => p.pinned.folder === chart.folder)!;
const yamlOf = (file: string) => load(readFileSync(file, 'utf8')) as any;
const vendored = (folder: string, ...rel: string[]) => path.join(DEFAULT_UPSTREAM, folder, ...rel);

/** The training fixture with the driver and the container toolkit run by the operator (the GPU Operator's kernel module path). */
function driverManagedFixture(): string {
  const d = parse(readFileSync(TRAINING_FILE, 'utf8'));
  d.gpuOperator = { ...d.gpuOperator, driver: 'managed', toolkit: 'managed' };
  const file = path.join(work, 'training-driver-managed.yaml');
  writeFileSync(file, stringify(d));
  return file;
}

const of = (plan: PlanResult['plan'], component: string, pred: (f: Finding) => boolean = () => true) => plan.findings.filter((f) => f.component === component && pred(f));

describe.skipIf(!HAS_UPSTREAM)('the previous releases src/versions.ts declares', () => {
  it('each is a vendored folder SOURCES.md names with its tag, and every path upgrade-plan reads of it is there', () => {
    const sources = readFileSync(path.join(DEFAULT_UPSTREAM, 'SOURCES.md'), 'utf8');
    expect(PREVIOUS_RELEASES.map((p) => p.key).sort()).toEqual(['gpuOperator', 'kueue', 'networkOperator']);
    for (const p of PREVIOUS_RELEASES) {
      const section = sources.split(/^## /m).find((x) => x.startsWith(`${p.folder}/ `));
      expect(section, p.folder).toBeDefined();
      expect(section).toMatch(new RegExp(`Ref tag \`v?${p.version.replace(/^v/, '').replace(/\./g, '\\.')}\``));
      for (const r of p.reads) expect(existsSync(path.join(DEFAULT_UPSTREAM, p.folder, r)), `${p.folder}/${r}`).toBe(true);
      // the chart upgrade-plan renders is among what it reads
      expect(p.reads.some((r) => p.chart.chartPath.startsWith(r))).toBe(true);
    }
  });
});

describe('upgrade-plan: a synthetic CRD pair', () => {
  it('a served version removed while in storedVersions, a new required field without default and a type change: a blocker each, exit 1', async () => {
    const r = await runCliInProcess(['upgrade-plan', '--from-crds', path.join(PAIR, 'old'), '--to-crds', path.join(PAIR, 'new'), '--format', 'json']);
    expect(r.code, r.stderr).toBe(1);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    const blockers = plan.findings.filter((f) => f.severity === 'blocker');
    expect(blockers.map((f) => [f.type, f.path ?? f.from]).sort()).toEqual([
      ['required-added-no-default', 'spec.owner'], ['stored-version-removed', 'v1beta1'], ['type-changed', 'spec.size'],
    ]);
    // each names both files it read
    for (const b of blockers) expect(b.files).toEqual([path.join(PAIR, 'old', 'widgets.example.com.yaml'), path.join(PAIR, 'new', 'widgets.example.com.yaml')]);
  });

  it('a CRD the new release no longer brings: a warning that it stays in the cluster (Argo CD never prunes a CRD), with the kubectl command; exit 0', async () => {
    // the new release: a Gadget CRD in place of the Widget one
    const to = path.join(work, 'crd-removed');
    mkdirSync(to, { recursive: true });
    const gadget = yamlOf(path.join(PAIR, 'new', 'widgets.example.com.yaml'));
    gadget.metadata.name = 'gadgets.example.com';
    gadget.spec.names = { ...gadget.spec.names, kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' };
    writeFileSync(path.join(to, 'gadgets.example.com.yaml'), stringify(gadget));
    const r = await runCliInProcess(['upgrade-plan', '--from-crds', path.join(PAIR, 'old'), '--to-crds', to, '--format', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    const removed = plan.findings.filter((f) => f.type === 'crd-removed');
    expect(removed.map((f) => [f.subject, f.severity])).toEqual([['CRD widgets.example.com', 'warning']]);
    expect(removed[0].message).toBe('the new release brings no Widget CRD: the old one stays in the cluster: Argo CD never prunes a CRD (no Application owns '
      + 'one), only the Widget objects it applied; an admin deletes it if wanted: kubectl delete crd widgets.example.com (deletes every Widget left)');
    expect(removed[0].message).not.toMatch(/Argo CD prunes it/);
  });

  it('as text: the blockers first, whole; --quiet prints them only, on stderr', async () => {
    const args = ['upgrade-plan', '--from-crds', path.join(PAIR, 'old'), '--to-crds', path.join(PAIR, 'new')];
    const text = await runCliInProcess(args);
    expect(text.code).toBe(1);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/^BLOCKED: 3 blocker\(s\), /);
    expect(lines.slice(2, 7)).toEqual(['', 'Blockers:', expect.stringMatching(/^ {2}crds: CRD widgets\.example\.com/), expect.any(String), expect.any(String)]);
    const quiet = await runCliInProcess([...args, '--quiet']);
    expect(quiet.code).toBe(1);
    expect(quiet.stdout).toBe('');
    expect(quiet.stderr.trimEnd().split('\n')).toEqual(lines.slice(4, 7).map((l) => expect.stringContaining(l.trim().slice(0, 40))));
    for (const l of quiet.stderr.trimEnd().split('\n')) expect(l).toMatch(/^blocker: crds: /);
  });

  it('the same CRDs at both ends: no blocker, exit 0 (the blockers come from the changes)', async () => {
    const r = await runCliInProcess(['upgrade-plan', '--from-crds', path.join(PAIR, 'old'), '--to-crds', path.join(PAIR, 'old'), '--format', 'json']);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as PlanResult['plan']).findings.map((f) => f.type)).toEqual(['crd-unchanged']);
  });

  it('without storedVersions in the old file, its storage version is what the cluster stored: removing a non-storage version only warns', async () => {
    const old = yamlOf(path.join(PAIR, 'old', 'widgets.example.com.yaml'));
    delete old.status;
    const file = path.join(work, 'no-status.yaml');
    writeFileSync(file, stringify(old));
    const r = await runCliInProcess(['upgrade-plan', '--from-crds', file, '--to-crds', path.join(PAIR, 'new'), '--format', 'json']);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    expect(plan.findings.find((f) => f.subject.endsWith('v1beta1'))?.type).toBe('version-removed');
  });
});

describe('upgrade-plan: bad input exits 2 with one line naming the flag or file', () => {
  it.each([
    [['--config', TRAINING_FILE, '--component', 'gpu'], /^error: --component gpu: expected gpu-operator, network-operator, kueue or all; nothing was written$/m],
    [['--config', TRAINING_FILE, '--component', 'kueue', '--from', '0.1.0'], /--from 0\.1\.0: no vendored release of kueue 0\.1\.0 .*carries 0\.18\.6, 0\.19\.2/],
    [['--config', TRAINING_FILE, '--component', 'kueue', '--to', '0.18.6'], /--to 0\.18\.6: this toolkit renders kueue 0\.19\.2 only/],
    [['--config', TRAINING_FILE, '--from', '0.18.6'], /--from names a release of one component/],
    [['--config', TRAINING_FILE, '--from-toolkit', ROOT, '--component', 'kueue', '--from', '0.18.6'], /--from-toolkit .* leave out --from/],
    [['--config', path.join(work, 'missing.yaml')], /--config .*missing\.yaml: no such file/],
    [[], /name the description of the cluster \(--config FILE\)/],
    [['--from-crds', path.join(PAIR, 'old')], /--from-crds without --config: name both/],
    [['--from-crds', path.join(work, 'nothing'), '--to-crds', path.join(PAIR, 'new')], /--from-crds .*nothing: no such file or folder/],
    [['--from-crds', TRAINING_FILE, '--to-crds', path.join(PAIR, 'new')], /--from-crds .*training-cluster\.yaml: no CustomResourceDefinition in it/],
    [['--config', TRAINING_FILE, '--from-toolkit', work], /--from-toolkit .*: no package\.json of gpu-cluster-manifests in it/],
    [['--config', TRAINING_FILE, '--format', 'xml'], /--format xml: expected text or json/],
  ])('%j', async (args, says) => {
    const r = await runCliInProcess(['upgrade-plan', ...args]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(says);
    expect(r.stdout).toBe('');
  });
});

describe.skipIf(!HAS_UPSTREAM)('upgrade-plan of the previous releases to the pinned ones, rendered by the engines', () => {
  let result: PlanResult;
  let plan: PlanResult['plan'];
  let config: string;
  beforeAll(async () => {
    config = driverManagedFixture();
    const [model] = loadModels([config]);
    result = await planUpgrade({
      model, components: ['gpu-operator', 'network-operator', 'kueue'], upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, cacheDir: defaultCacheDir(),
    });
    plan = result.plan;
  }, 240_000);

  it('plans each component from the previous release src/versions.ts declares to the pinned one, every finding typed and naming the files it read', () => {
    expect(plan.components.map((c) => [c.component, c.from, c.to])).toEqual([
      ['gpu-operator', previous(GPU_OPERATOR_CHART).version, VERSIONS.gpuOperator.version],
      ['network-operator', previous(NETWORK_OPERATOR_CHART).version, VERSIONS.networkOperator.version],
      ['kueue', previous(KUEUE_CHART).version, VERSIONS.kueue.version],
    ]);
    const fileless = plan.findings.filter((f) => f.files.length === 0 && f.type !== 'crd-not-vendored');
    expect(fileless).toEqual([]);
    expect(new Set(plan.findings.map((f) => f.section)).size).toBeGreaterThanOrEqual(6);
  });

  it('network-operator: the rendered NicClusterPolicy is invalid against the old CRD, so CRD first and rollback blocked', () => {
    const oldCrd = yamlOf(vendored(previous(NETWORK_OPERATOR_CHART).folder, 'deployment/network-operator/crds/mellanox.com_nicclusterpolicies.yaml'));
    const oldSpec = oldCrd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    // what the old CRD says, read from it: no spec.global, and repository/version required of the RDMA device plugin
    expect(oldSpec.properties.global).toBeUndefined();
    expect(oldSpec.properties.rdmaSharedDevicePlugin.required).toEqual(expect.arrayContaining(['repository', 'version']));
    const invalid = of(plan, 'network-operator', (f) => f.type === 'invalid-under-old-crd');
    expect(invalid.map((f) => f.subject)).toEqual(['NicClusterPolicy nic-cluster-policy']);
    expect(invalid[0].message).toContain('spec.global: unknown field');
    expect(invalid[0].message).toContain('spec.rdmaSharedDevicePlugin.repository: required field is missing');
    expect(invalid[0].message).toContain('spec.rdmaSharedDevicePlugin.version: required field is missing');
    expect(of(plan, 'network-operator', (f) => f.type === 'crd-first' || f.type === 'rollback-blocked').map((f) => f.type).sort()).toEqual(['crd-first', 'rollback-blocked']);
    expect(of(plan, 'network-operator', (f) => f.type === 'valid-under-new-crd').map((f) => f.subject)).toEqual(['NicClusterPolicy nic-cluster-policy']);
  });

  it('network-operator: 13 relaxed requirements, new spec.global, a new NicNodePolicy CRD with a Fail webhook', () => {
    const relaxed = of(plan, 'network-operator', (f) => f.type === 'relaxed' && f.change === 'required' && f.subject.startsWith('CRD nicclusterpolicies.mellanox.com'));
    expect(relaxed).toHaveLength(13);
    expect(of(plan, 'network-operator', (f) => f.type === 'field-added' && f.path === 'spec.global')).toHaveLength(1);
    expect(of(plan, 'network-operator', (f) => f.type === 'crd-added').map((f) => f.subject)).toEqual(['CRD nicnodepolicies.mellanox.com']);
    const hook = of(plan, 'network-operator', (f) => f.type === 'webhook-added');
    expect(hook.map((f) => [f.path, f.to])).toEqual([['vnicnodepolicy.kb.io', 'Fail']]);
    expect(hook[0].message).toContain('nicnodepolicies');
  });

  it('gpu-operator: NVIDIADriver spec.default new-required-defaulted (safe), one new CEL rule, 17 upgradePolicy paths', () => {
    const driver = of(plan, 'gpu-operator', (f) => f.subject.startsWith('CRD nvidiadrivers.nvidia.com'));
    expect(driver.filter((f) => f.type === 'required-added-defaulted').map((f) => [f.path, f.severity])).toEqual([['spec.default', 'info']]);
    expect(driver.filter((f) => f.type === 'stricter' && f.change === 'cel')).toHaveLength(1);
    expect(driver.filter((f) => f.type === 'field-added' && f.path!.startsWith('spec.upgradePolicy'))).toHaveLength(17);
    expect(driver.filter((f) => f.severity === 'blocker')).toEqual([]);
  });

  it('gpu-operator: ClusterPolicy 20 added, 1 stricter, 0 removed', () => {
    const policy = of(plan, 'gpu-operator', (f) => f.subject.startsWith('CRD clusterpolicies.nvidia.com'));
    expect(policy.filter((f) => f.type === 'field-added')).toHaveLength(20);
    expect(policy.filter((f) => f.type === 'stricter')).toHaveLength(1);
    expect(policy.filter((f) => f.type === 'field-removed')).toHaveLength(0);
  });

  it('gpu-operator: the driver and driver-manager images reload the kernel module; toolkit, device plugin/GFD, DCGM exporter, MIG manager roll', () => {
    const values = yamlOf(vendored(previous(GPU_OPERATOR_CHART).folder, 'deployments/gpu-operator/values.yaml'));
    const impact = (operand: string) => of(plan, 'gpu-operator', (f) => f.section === 'gpu-node-impact' && f.path === `spec.${operand}`)[0];
    const images = VERSIONS.gpuOperator.images;
    const image = (i: { repository: string; image: string; version: string }) => `${i.repository}/${i.image}:${i.version}`;
    expect(impact('driver')).toMatchObject({ type: 'kernel-module-reload', from: `${values.driver.repository}/${values.driver.image}:${values.driver.version}`, to: image(images.driver) });
    expect(impact('driver.manager')).toMatchObject({ type: 'kernel-module-reload', from: `${values.driver.manager.repository}/${values.driver.manager.image}:${values.driver.manager.version}`, to: image(images.driverManager) });
    for (const operand of ['toolkit', 'gfd', 'dcgmExporter', 'migManager']) expect(impact(operand)?.type, operand).toBe('daemonset-roll');
    expect(impact('devicePlugin')?.type).toBe('device-plugin-restart');
    // the upgrade policy the ClusterPolicy actually has (its CRD's defaults applied) is named with the reloads
    expect(of(plan, 'gpu-operator', (f) => f.type === 'upgrade-policy')).toHaveLength(1);
  });

  it('gpu-operator: at the previous release the chart ignores clusterPolicy.deployCR and emits a second ClusterPolicy cluster-policy (two owners)', () => {
    // the previous chart's template has no deployCR guard; the pinned one's has
    const template = (folder: string) => readFileSync(vendored(folder, 'deployments/gpu-operator/templates/clusterpolicy.yaml'), 'utf8');
    expect(template(previous(GPU_OPERATOR_CHART).folder)).not.toContain('.Values.clusterPolicy.deployCR');
    expect(template(GPU_OPERATOR_CHART.folder)).toContain('.Values.clusterPolicy.deployCR');
    const owners = of(plan, 'gpu-operator', (f) => f.type === 'two-owners');
    expect(owners.map((f) => [f.subject, f.severity])).toEqual([['ClusterPolicy cluster-policy', 'warning']]);
    expect(owners[0].from).toEqual(expect.arrayContaining(['training-cluster-gpu-operator-install', 'training-cluster-gpu-operator']));
    expect(owners[0].to).toEqual(['training-cluster-gpu-operator']);
  });

  it('kueue: 9 CRDs unchanged, MultiKueueConfig clusters an ordered atomic list with a uniqueness rule, Workload maxItems 10 -> 18', () => {
    expect(of(plan, 'kueue', (f) => f.type === 'crd-unchanged')).toHaveLength(9);
    const clusters = of(plan, 'kueue', (f) => f.subject.startsWith('CRD multikueueconfigs.kueue.x-k8s.io') && f.path === 'spec.clusters');
    expect(clusters.map((f) => [f.type, f.change, f.from, f.to]).filter(([, c]) => c === 'list-type')).toEqual([['stricter', 'list-type', 'set', 'atomic']]);
    expect(clusters.filter((f) => f.change === 'cel').map((f) => f.to)).toHaveLength(1);
    const workload = of(plan, 'kueue', (f) => f.subject.startsWith('CRD workloads.kueue.x-k8s.io') && f.change === 'maxItems' && f.path === 'spec.podSets');
    expect(workload.map((f) => [f.type, f.from, f.to])).toContainEqual(['relaxed', 10, 18]);
  });

  it('kueue: every rendered Kueue CR valid both ways', () => {
    const crs = of(plan, 'kueue', (f) => f.section === 'revalidation');
    expect(crs.filter((f) => f.type !== 'valid-under-new-crd' && f.type !== 'valid-under-old-crd')).toEqual([]);
    const subjects = (t: string) => crs.filter((f) => f.type === t).map((f) => f.subject).sort();
    expect(subjects('valid-under-new-crd').length).toBeGreaterThan(5);
    expect(subjects('valid-under-new-crd')).toEqual(subjects('valid-under-old-crd'));
  });

  it('kueue: the controller\'s webhook window; WaitForPodsReady on by default, concurrency defaults up, qps/burst pinned below default', () => {
    const window = of(plan, 'kueue', (f) => f.type === 'webhook-window');
    expect(window.map((f) => [f.subject, f.severity])).toEqual([['Deployment kueue-system/kueue-controller-manager', 'warning']]);
    const defaults = of(plan, 'kueue', (f) => f.section === 'config-defaults');
    const key = (p: string) => `${'managerConfig.controllerManagerConfigYaml'}: ${p}`;
    expect(defaults.find((f) => f.subject === key('waitForPodsReady'))).toMatchObject({ type: 'default-changed-unpinned', from: 'off', to: 'on' });
    const concurrency = defaults.filter((f) => f.subject.startsWith(key('controller.groupKindConcurrency.')));
    expect(concurrency.length).toBeGreaterThan(0);
    for (const f of concurrency) expect(Number(f.to)).toBeGreaterThan(Number(f.from));
    for (const k of ['clientConnection.qps', 'clientConnection.burst']) expect(defaults.find((f) => f.subject === key(k))?.type, k).toBe('pinned-below-upstream');
  });

  it('the order is data: the new CRDs by the install in its wave, then the new CRs; the rejected order and every object named', () => {
    const net = plan.order.find((o) => o.component === 'network-operator')!;
    expect(net.steps.map((s) => [s.application, s.objects.some((o) => o.kind === 'CustomResourceDefinition')])).toEqual([
      ['training-cluster-network-operator-install', true], ['training-cluster-network-operator', false],
    ]);
    expect(net.steps[0].wave).toBeLessThan(net.steps[1].wave!);
    expect(net.rejected?.steps.map((s) => s.application)).toEqual(['training-cluster-network-operator', 'training-cluster-network-operator-install']);
    for (const o of [...net.before, ...net.steps.flatMap((s) => s.objects)]) {
      expect(result.manifests.get(o.ref), o.ref).toMatchObject({ kind: o.kind, metadata: { name: o.name } });
    }
    expect(plan.findings.filter((f) => f.type === 'order-blocked')).toEqual([]);
  });

  it('as text for people: the summary first (drains, the webhook window, behaviour changes, the order), short lines; info and files with --verbose only', () => {
    const text = formatPlan(plan);
    expect(text[1]).toMatch(/^ok: 0 blocker\(s\), \d+ warning\(s\), \d+ info finding\(s\); the info findings, the files read and the notes: --verbose; /);
    expect(text.length).toBeLessThan(60);
    for (const l of text) expect(l.length, l).toBeLessThanOrEqual(SUMMARY_WIDTH);
    expect(text.join('\n')).not.toMatch(/\[info\]|upstream-installs\/|crds\/gpu-operator/);
    const part = (title: string) => {
      const end = text.indexOf('', text.indexOf(title));
      return text.slice(text.indexOf(title) + 1, end < 0 ? undefined : end);
    };
    // the driver's kernel module reloads (a drain) and its upgrade policy, the device plugin, Kueue's webhooks, the DaemonSets that roll
    expect(part('Maintenance windows:')).toEqual(expect.arrayContaining([
      expect.stringMatching(/^ {2}gpu-operator: ClusterPolicy cluster-policy: driver .*: .*drain/),
      expect.stringMatching(/^ {2}gpu-operator: ClusterPolicy cluster-policy: spec\.driver\.upgradePolicy/),
      expect.stringMatching(/^ {2}gpu-operator: ClusterPolicy cluster-policy: devicePlugin k8s-device-plugin:\S+ -> k8s-device-plugin:\S+: /),
      expect.stringMatching(/^ {2}kueue: Deployment kueue-system\/kueue-controller-manager: kueue:v\S+ -> kueue:v\S+: .* with failurePolicy Fail refuse/),
      expect.stringMatching(/^ {2}gpu-operator: \d+ DaemonSet\(s\) roll their pods node by node \(no drain\): /),
    ]));
    expect(part('Behaviour changes:')).toEqual(expect.arrayContaining([expect.stringMatching(/^ {2}kueue: managerConfig\.controllerManagerConfigYaml: waitForPodsReady: on by default from /)]));
    expect(part('Order:').map((l) => l.split(':')[0].trim())).toEqual(['gpu-operator', 'network-operator', 'kueue']);
    // --verbose: the same summary, then every finding whole with the files it read, and the notes
    const verbose = formatPlan(plan, { verbose: true });
    expect(verbose.slice(0, text.length - 1)).toEqual(text.slice(0, text.length - 1).map((l, i) => (i === 1 ? expect.stringMatching(/^ok: 0 blocker\(s\), \d+ warning\(s\), \d+ info finding\(s\)$/) : l)));
    const all = verbose.join('\n');
    for (const f of plan.findings.filter((x) => !['field-added', 'valid-under-new-crd', 'valid-under-old-crd'].includes(x.type))) expect(all, f.type).toContain(`${f.message}${f.files.length > 0 ? ` [${f.files.join(', ')}]` : ''}`);
    for (const n of plan.notes) expect(verbose).toContain(`  ${n}`);
  });

  it('deterministic: the same plan again is the same JSON', async () => {
    const [model] = loadModels([config]);
    const again = await planUpgrade({ model, components: ['gpu-operator', 'network-operator', 'kueue'], upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, cacheDir: defaultCacheDir() });
    expect(JSON.stringify(again.plan)).toBe(JSON.stringify(plan));
  }, 240_000);
});

describe.skipIf(!HAS_UPSTREAM)('upgrade-plan: CRDs given beside a component plan', () => {
  it('those no planned component brings are compared on their own: the synthetic pair\'s blockers, exit 1', async () => {
    const r = await runCliInProcess(['upgrade-plan', '--config', TRAINING_FILE, '--component', 'kueue', '--from-crds', path.join(PAIR, 'old'), '--to-crds', path.join(PAIR, 'new'), '--format', 'json']);
    expect(r.code, r.stderr).toBe(1);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    expect(plan.findings.filter((f) => f.severity === 'blocker').map((f) => [f.component, f.type]).sort()).toEqual([
      ['crds', 'required-added-no-default'], ['crds', 'stored-version-removed'], ['crds', 'type-changed'],
    ]);
    expect(plan.components.map((c) => c.component)).toEqual(['kueue']);
  }, 240_000);
});

describe.skipIf(!HAS_UPSTREAM)('upgrade-plan: an operator this description does not install', () => {
  it('a new-form CR with nobody of this description to upgrade its CRD is a blocker: exit 1, and the plan says so', async () => {
    const d = parse(readFileSync(TRAINING_FILE, 'utf8'));
    d.installs = { ...d.installs, networkOperator: 'preinstalled' };
    const file = path.join(work, 'preinstalled-network-operator.yaml');
    writeFileSync(file, stringify(d));
    const r = await runCliInProcess(['upgrade-plan', '--config', file, '--component', 'network-operator', '--format', 'json']);
    expect(r.code, r.stderr).toBe(1);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    expect(plan.findings.filter((f) => f.severity === 'blocker').map((f) => [f.type, f.to])).toEqual([['order-blocked', ['NicClusterPolicy nic-cluster-policy']]]);
    expect(plan.components[0].install).toBe('not-managed');
  }, 240_000);
});

/**
 * A previous toolkit, for the toolkit-to-toolkit form: this package as built (package.json, lib/, the files it reads at
 * run time, its dependencies linked one by one so that its caches stay its own), with the pins of src/versions.ts
 * moved back to the previous releases src/versions.ts declares: what an installed older version is to upgrade-plan
 * (its synth renders, its versions module pins).
 */
function previousToolkit(): string {
  const dir = path.join(work, 'previous-toolkit');
  cpSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  for (const sub of ['lib/src', 'lib/imports', 'src/components/argocd/health', 'src/clusters/cluster-description.schema.json']) cpSync(path.join(ROOT, sub), path.join(dir, sub), { recursive: true });
  mkdirSync(path.join(dir, 'node_modules'));
  for (const name of readdirSync(path.join(ROOT, 'node_modules')).filter((n) => !n.startsWith('.'))) symlinkSync(path.join(ROOT, 'node_modules', name), path.join(dir, 'node_modules', name));
  const versions = path.join(dir, 'lib', 'src', 'versions.js');
  let js = readFileSync(versions, 'utf8');
  for (const p of PREVIOUS_RELEASES) {
    const quoted = `'${p.pinned.version}'`;
    expect(js, p.pinned.version).toContain(quoted);
    js = js.split(quoted).join(`'${p.version}'`);
  }
  writeFileSync(versions, js);
  return dir;
}

describe.skipIf(!HAS_UPSTREAM)('upgrade-plan --from-toolkit: toolkit to toolkit', () => {
  it('a toolkit that pins the previous releases: each component planned from its pins, its own render as the old end (the operator CRs compared)', async () => {
    const r = await runCliInProcess(['upgrade-plan', '--config', TRAINING_FILE, '--from-toolkit', previousToolkit(), '--format', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    expect(plan.mode).toBe('toolkit');
    expect(plan.components.map((c) => [c.component, c.from])).toEqual([
      ['gpu-operator', previous(GPU_OPERATOR_CHART).version], ['network-operator', previous(NETWORK_OPERATOR_CHART).version], ['kueue', previous(KUEUE_CHART).version],
    ]);
    // the old end's ClusterPolicy is that toolkit's own (validator tagged with its GPU Operator release), not the old chart's
    const validator = plan.findings.find((f) => f.section === 'gpu-node-impact' && f.path === 'spec.validator');
    expect(validator).toMatchObject({ type: 'daemonset-roll' });
    expect(String(validator!.from)).toContain(`:${previous(GPU_OPERATOR_CHART).version}`);
    expect(plan.findings.filter((f) => f.type === 'operands-not-compared')).toEqual([]);
    expect(plan.findings.find((f) => f.type === 'invalid-under-old-crd')?.subject).toBe('NicClusterPolicy nic-cluster-policy');
  }, 300_000);

  it('another installed version of the package (here: this one, built) renders the description itself: the same pins, nothing to plan', async () => {
    const r = await runCliInProcess(['upgrade-plan', '--config', TRAINING_FILE, '--from-toolkit', ROOT, '--format', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as PlanResult['plan'];
    expect(plan.mode).toBe('toolkit');
    expect(plan.components).toEqual([]);
    expect(plan.notes.filter((n) => n.includes('at both ends'))).toHaveLength(3);
    expect(plan.findings.filter((f) => f.severity === 'blocker')).toEqual([]);
  }, 240_000);
});
