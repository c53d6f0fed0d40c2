import { describe, expect, it } from 'vitest';
import { formatPlan, shortened, SUMMARY_WIDTH } from '../../src/upgrade/format';
import { Finding, UpgradePlan } from '../../src/upgrade/types';

/* upgrade-plan's text for people, on a plan made here (test/upgrade/upgrade-plan.test.ts reads a real one). */

const finding = (f: Partial<Finding> & Pick<Finding, 'type' | 'severity' | 'section'>): Finding => ({
  component: 'kueue', subject: 'Deployment kueue-system/kueue-controller-manager', message: 'm', files: ['upstream-installs/kueue/values.yaml'], ...f,
});

const webhooks = Array.from({ length: 43 }, (_, i) => `m${i}.kueue.x-k8s.io`);
const resources = Array.from({ length: 20 }, (_, i) => `kind${i}s`);
const plan = (findings: Finding[]): UpgradePlan => ({
  cluster: 'lab',
  mode: 'component',
  components: [{ component: 'kueue', from: '0.18.6', to: '0.19.2', install: 'managed' }],
  roots: { 'upstream-installs/': '/x' },
  findings,
  order: [],
  summary: {
    blockers: findings.filter((f) => f.severity === 'blocker').length,
    warnings: findings.filter((f) => f.severity === 'warning').length,
    infos: findings.filter((f) => f.severity === 'info').length,
  },
  notes: ['kueue: a note'],
});

describe('upgrade-plan as text', () => {
  const window = finding({
    section: 'control-plane-impact',
    type: 'webhook-window',
    severity: 'warning',
    from: ['registry.k8s.io/kueue/kueue:v0.18.6'],
    to: ['registry.k8s.io/kueue/kueue:v0.19.2'],
    message: 'registry.k8s.io/kueue/kueue:v0.18.6 -> registry.k8s.io/kueue/kueue:v0.19.2: its 1 replica(s) roll, and it serves 43 webhook(s); until a new pod is ready, '
      + `the 43 with failurePolicy Fail (${webhooks.join(', ')}) refuse every request they intercept: creating or updating ${resources.join(', ')} fails in that window`,
  });
  const blocker = finding({ section: 'order', type: 'order-blocked', severity: 'blocker', subject: 'lab-kueue', message: `would send ${'x'.repeat(300)}: upgrade first` });
  const info = finding({ section: 'crd-changes', type: 'crd-unchanged', severity: 'info', subject: 'CRD cohorts.kueue.x-k8s.io', message: 'unchanged' });
  const rolls = [
    finding({ section: 'gpu-node-impact', type: 'daemonset-roll', severity: 'info', component: 'gpu-operator', subject: 'ClusterPolicy cluster-policy', path: 'spec.gfd', message: 'rolls' }),
    finding({ section: 'gpu-node-impact', type: 'daemonset-roll', severity: 'info', component: 'gpu-operator', subject: 'DaemonSet gpu-operator/nfd-worker', message: 'rolls' }),
  ];
  const defaults = finding({ section: 'config-defaults', type: 'default-changed-unpinned', severity: 'warning', subject: 'clientConnection.qps', message: 'upstream\'s default 50 -> 300' });
  const text = formatPlan(plan([info, window, blocker, ...rolls, defaults]));

  it('what changes and the counts, then the blockers whole, the windows, the behaviour changes; no info, no files', () => {
    expect(text.slice(0, 2)).toEqual([
      'upgrade plan for lab (component): kueue 0.18.6 -> 0.19.2',
      'BLOCKED: 1 blocker(s), 2 warning(s), 3 info finding(s); the info findings, the files read and the notes: --verbose; every finding and the order as data: --format json',
    ]);
    expect(text).toContain(`  kueue: lab-kueue: ${blocker.message}`);
    expect(text.slice(text.indexOf('Maintenance windows:') + 1, text.indexOf('Behaviour changes:') - 1)).toEqual([
      '  kueue: Deployment kueue-system/kueue-controller-manager: kueue:v0.18.6 -> kueue:v0.19.2: its 1 replica(s) roll, and it serves 43 webhook(s); until a new pod is ready, '
        + 'the 43 with failurePolicy Fail refuse every request they intercept …',
      '  gpu-operator: 2 DaemonSet(s) roll their pods node by node (no drain): gfd, gpu-operator/nfd-worker',
    ]);
    expect(text.slice(text.indexOf('Behaviour changes:') + 1)).toEqual(['  kueue: clientConnection.qps: upstream\'s default 50 -> 300']);
    expect(text.join('\n')).not.toMatch(/unchanged|values\.yaml|a note/);
  });

  it('--verbose: the same summary, then every finding by section with its files, and the notes', () => {
    const verbose = formatPlan(plan([info, window, blocker, ...rolls, defaults]), { verbose: true });
    expect(verbose.slice(2, text.length)).toEqual(text.slice(2));
    expect(verbose).toContain('    [info] crd-unchanged: CRD cohorts.kueue.x-k8s.io: unchanged [upstream-installs/kueue/values.yaml]');
    expect(verbose).toContain(`    [warning] webhook-window: Deployment kueue-system/kueue-controller-manager: ${window.message} [upstream-installs/kueue/values.yaml]`);
    expect(verbose.slice(-2)).toEqual(['Notes:', '  kueue: a note']);
  });

  it('a long line is cut at a clause before the width, never in a word', () => {
    const long = `a: ${'word '.repeat(30)}: b; ${'more '.repeat(40)}`;
    expect(shortened(long).length).toBeLessThanOrEqual(SUMMARY_WIDTH);
    expect(shortened(long)).toMatch(/ …$/);
    expect(shortened('short')).toBe('short');
  });
});
