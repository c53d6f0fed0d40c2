import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HealthVm, lua51Problems } from './lua';
import { configuredHealth, hasBuiltInHealth, healthCheckData, healthChecks, healthKey } from '../../src/components/argocd/health-checks';

interface HealthTest {
  readonly healthStatus: { readonly status: string; readonly message?: string };
  readonly inputPath: string;
}

const CHECKS = healthChecks();

describe('Argo CD health checks, in Argo CD\'s layout', () => {
  it('cover Application and the custom kinds the waves wait on', () => {
    expect(CHECKS.map((c) => `${c.group}/${c.kind}`)).toEqual([
      'argoproj.io/Application',
      'kueue.x-k8s.io/AdmissionCheck',
      'kueue.x-k8s.io/ClusterQueue',
      'kueue.x-k8s.io/LocalQueue',
      'kueue.x-k8s.io/MultiKueueCluster',
      'mellanox.com/NicClusterPolicy',
      'nvidia.com/ClusterPolicy',
      'nvidia.com/DynamoGraphDeployment',
    ]);
  });

  it.each(CHECKS.map((c) => [`${c.group}/${c.kind}`, c] as const))('%s: health.lua, health_test.yaml and every testdata file it names, each used', (_, c) => {
    const tests = (parse(readFileSync(path.join(c.dir, 'health_test.yaml'), 'utf8')) as { tests: HealthTest[] }).tests;
    expect(tests.length).toBeGreaterThanOrEqual(4);
    const used = new Set(tests.map((t) => t.inputPath));
    for (const p of used) expect(existsSync(path.join(c.dir, p)), p).toBe(true);
    expect(readdirSync(path.join(c.dir, 'testdata')).map((f) => `testdata/${f}`).sort()).toEqual([...used].sort());
    // each test sees a whole object of its kind
    for (const p of used) {
      const obj = parse(readFileSync(path.join(c.dir, p), 'utf8')) as { apiVersion: string; kind: string };
      expect(obj.apiVersion.split('/')[0]).toBe(c.group);
      expect(obj.kind).toBe(c.kind);
    }
    // each status a check can return is tested at least once
    const statuses = new Set(tests.map((t) => t.healthStatus.status));
    for (const s of [...c.script.matchAll(/status = "(\w+)"/g)].map((m) => m[1])) expect(statuses, `${s} is returned but never tested`).toContain(s);
  });

  it.each(CHECKS.map((c) => [`${c.group}/${c.kind}`, c] as const))('%s is Lua 5.1 using only what Argo CD\'s VM has', (_, c) => {
    expect(lua51Problems(c.script)).toEqual([]);
  });

  it('the guard refuses Lua 5.2+ syntax, missing libraries and global writes', () => {
    expect(lua51Problems('local a = 7 // 2\nreturn {}')[0]).toMatch(/not Lua 5.1/);
    expect(lua51Problems('goto done\n::done::\nreturn {}')[0]).toMatch(/not Lua 5.1/);
    expect(lua51Problems('local a = 1 & 2\nreturn {}')[0]).toMatch(/not Lua 5.1/);
    expect(lua51Problems('local x <const> = 1\nreturn {}')[0]).toMatch(/not Lua 5.1/);
    expect(lua51Problems('return { message = string.format("%s", obj.kind) }')).toEqual(['line 1: global "string" does not exist in Argo CD\'s Lua environment']);
    expect(lua51Problems('return { message = table.unpack({"a"}) }')[0]).toMatch(/"table.unpack" is not in Argo CD's Lua environment/);
    expect(lua51Problems('hs = {}\nreturn hs')).toContain('line 1: writes the global "hs"');
    expect(lua51Problems('local hs = { status = "Healthy" }\nfor _, c in ipairs(obj.status.conditions) do table.insert(hs, c) end\nreturn hs')).toEqual([]);
  });
});

describe('each check passes its health_test.yaml in a real Lua VM', () => {
  let vm: HealthVm;
  beforeAll(async () => {
    // the instant the health_test.yaml cases are written against (the waits the Application check bounds)
    vm = await HealthVm.create({ now: Date.UTC(2026, 11, 1, 12, 0, 0) / 1000 });
  });
  afterAll(() => vm.close());

  const cases = CHECKS.flatMap((c) => (parse(readFileSync(path.join(c.dir, 'health_test.yaml'), 'utf8')) as { tests: HealthTest[] }).tests
    .map((t) => [`${c.group}/${c.kind} ${t.inputPath}`, c, t] as const));
  it.each(cases)('%s', async (_, c, t) => {
    const obj = parse(readFileSync(path.join(c.dir, t.inputPath), 'utf8'));
    const health = await vm.run(c.script, obj);
    expect({ status: health?.status, message: health?.message ?? '' }).toEqual({ status: t.healthStatus.status, message: t.healthStatus.message ?? '' });
  });

  it('a ClusterQueue an admin holds (stopPolicy Hold or HoldAndDrain) and its LocalQueues are both Suspended, not Degraded', async () => {
    const check = (kind: string) => CHECKS.find((c) => c.group === 'kueue.x-k8s.io' && c.kind === kind)!;
    const read = (kind: string, file: string) => parse(readFileSync(path.join(check(kind).dir, 'testdata', file), 'utf8'));
    // Kueue v0.19.2 (localqueue_controller.go Reconcile): a LocalQueue whose ClusterQueue is not Active says ClusterQueueIsInactive
    for (const stopPolicy of ['Hold', 'HoldAndDrain']) {
      const cq = read('ClusterQueue', 'stopped.yaml');
      cq.spec.stopPolicy = stopPolicy;
      const lq = read('LocalQueue', 'cluster-queue-inactive.yaml');
      expect(lq.spec.clusterQueue).toBe(cq.metadata.name);
      const [cqHealth, lqHealth] = [await vm.run(check('ClusterQueue').script, cq), await vm.run(check('LocalQueue').script, lq)];
      expect([cqHealth?.status, lqHealth?.status], stopPolicy).toEqual(['Suspended', 'Suspended']);
    }
  });

  it('the VM is Argo CD\'s: no string library, no string methods', async () => {
    await expect(vm.run('return { status = string.upper("x") }', {})).rejects.toThrow(/string/);
    await expect(vm.run('return { status = ("x"):upper() }', {})).rejects.toThrow(/index a string/);
    expect(await vm.run('return { status = "Healthy", message = obj.metadata.name .. "!" }', { metadata: { name: 'né "q"\n' } })).toEqual({ status: 'Healthy', message: 'né "q"\n!' });
  });
});

describe('argocd-cm data of the checks', () => {
  it('one resource.customizations.health.<group>_<kind> key per check, holding its script', () => {
    const data = healthCheckData();
    expect(Object.keys(data).sort()).toEqual(CHECKS.map((c) => healthKey(c.group, c.kind)).sort());
    expect(data['resource.customizations.health.argoproj.io_Application']).toBe(CHECKS[0].script);
  });

  it('configuredHealth reads the per-kind keys and a resource.customizations block with wildcards', () => {
    const has = configuredHealth({
      'resource.customizations.health.nvidia.com_ClusterPolicy': 'return {}',
      'resource.customizations': 'ec2.aws.crossplane.io/*:\n  health.lua: |\n    return {}\n"*.example.com/Widget":\n  actions: |\n    x\n',
    });
    expect(has('nvidia.com', 'ClusterPolicy')).toBe(true);
    expect(has('ec2.aws.crossplane.io', 'Instance')).toBe(true);
    expect(has('a.example.com', 'Widget')).toBe(false); // actions only
    expect(has('mellanox.com', 'NicClusterPolicy')).toBe(false);
  });

  it('Argo CD v3.5.1 knows the health of Deployments and VictoriaMetrics kinds, not of Applications or the NVIDIA and Kueue kinds', () => {
    expect(hasBuiltInHealth('apps', 'Deployment')).toBe(true);
    expect(hasBuiltInHealth('operator.victoriametrics.com', 'VMServiceScrape')).toBe(true);
    expect(hasBuiltInHealth('iam.aws.crossplane.io', 'Role')).toBe(true);
    expect(hasBuiltInHealth('apiextensions.k8s.io', 'CustomResourceDefinition')).toBe(true);
    for (const c of CHECKS) expect(hasBuiltInHealth(c.group, c.kind), `${c.group}/${c.kind}`).toBe(false);
  });
});
