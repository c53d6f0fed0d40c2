import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UPSTREAM_FACTS_DIR, VENDORED_DIR } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { BUILT_IN_DEFAULTS_FILE, readBuiltInDefaults } from '../../src/upgrade/config-defaults';
import { featureGateFindings, gateAt, GateSpec, gatesSet, parseFeatureGates, ReleaseGates } from '../../src/upgrade/feature-gates';
import { VERSIONS } from '../../src/versions';
import { previousRelease } from '../upstream/previous-charts';

/*
 * Kueue's feature gates across the vendored releases (src/upstream/vendored/kueue-<tag>/pkg/features/kube_features.go):
 * the facts compared with are read from those files, never typed here.
 */

const old = previousRelease('kueue');
const pinned = VERSIONS.kueue.version;
const featuresFile = (folder: string) => path.join(VENDORED_DIR, folder, 'pkg', 'features', 'kube_features.go');
const read = (folder: string): ReleaseGates => parseFeatureGates(readFileSync(featuresFile(folder), 'utf8'), folder);
const before = read(old.folder);
const after = read(`kueue-v${pinned}`);

/** The gates of a release's file by its `const` declarations (`X featuregate.Feature = "X"`): what the map must hold. */
const declared = (folder: string) => [...readFileSync(featuresFile(folder), 'utf8').matchAll(/^\t(\w+)\s+featuregate\.Feature = "\1"$/gm)].map((m) => m[1]).sort();

/** A Kueue manager Deployment started with these gates. */
const manager = (gates: Record<string, boolean>): Manifest => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'kueue-controller-manager', namespace: 'kueue-system' },
  spec: { template: { spec: { containers: [{ name: 'manager', image: `registry.k8s.io/kueue/kueue:v${old.version}`, args: ['--zap-log-level=2', `--feature-gates=${Object.entries(gates).map(([k, v]) => `${k}=${v}`).join(',')}`] }] } } },
});

describe('Kueue feature gates, read from the vendored kube_features.go of each release', () => {
  it('every gate each file declares is read, with its versioned specs', () => {
    for (const [folder, gates] of [[old.folder, before], [`kueue-v${pinned}`, after]] as const) {
      expect([...gates.gates.keys()].sort(), folder).toEqual(declared(folder));
      for (const specs of gates.gates.values()) expect(specs.length).toBeGreaterThan(0);
    }
  });

  const removed = [...before.gates.keys()].filter((g) => gateAt(after.gates.get(g), pinned) === undefined);
  const newlyLocked = ([name, s]: [string, readonly GateSpec[]]) => gateAt(s, pinned)?.lockToDefault
    && !gateAt(before.gates.get(name), old.version)?.lockToDefault;
  const locked = [...after.gates].filter(newlyLocked)
    .map(([name]) => name);

  it('a gate the new release removed, set on the running Kueue: a blocker naming the gate and what stops', () => {
    expect(removed.length).toBeGreaterThan(0);
    const set = gatesSet([manager(Object.fromEntries(removed.map((r) => [r, false])))]);
    const fs = featureGateFindings('kueue', { version: old.version, release: before, set, setFrom: 'the cluster\'s Kueue' }, { version: pinned, release: after, set }, 'its Fail webhooks refuse');
    const blockers = fs.filter((f) => f.type === 'feature-gate-removed');
    expect(blockers.map((f) => f.subject).sort()).toEqual(removed.map((r) => `feature gate ${r}`).sort());
    expect(blockers.every((f) => f.severity === 'blocker' && /refuses to start/.test(f.message) && /Fail webhooks/.test(f.message))).toBe(true);
  });

  it('a gate the new release locks, set against its locked default: a blocker; set to it: an info to drop it', () => {
    expect(locked.length).toBeGreaterThan(0);
    const name = locked[0];
    const value = gateAt(after.gates.get(name), pinned)!.default;
    const against = featureGateFindings('kueue', { version: old.version, release: before, set: new Map([[name, !value]]) }, { version: pinned, release: after, set: new Map([[name, !value]]) }, 'x');
    expect(against.filter((f) => f.type === 'feature-gate-locked').map((f) => f.severity)).toEqual(['blocker']);
    const same = featureGateFindings('kueue', { version: old.version, release: before, set: new Map([[name, value]]) }, { version: pinned, release: after, set: new Map([[name, value]]) }, 'x');
    expect(same.filter((f) => f.type === 'feature-gate-locked').map((f) => f.severity)).toEqual(['info']);
  });

  it('each default that flips is a warning where the gate is not set, none where it is', () => {
    const flipped = [...after.gates.keys()].filter((n) => {
      const a = gateAt(before.gates.get(n), old.version);
      const b = gateAt(after.gates.get(n), pinned);
      return a && b && a.default !== b.default;
    });
    expect(flipped.length).toBeGreaterThan(0);
    const unset = featureGateFindings('kueue', { version: old.version, release: before, set: new Map() }, { version: pinned, release: after, set: new Map() }, 'x');
    expect(unset.filter((f) => f.type === 'feature-gate-default-changed').map((f) => f.subject).sort()).toEqual(flipped.map((n) => `feature gate ${n}`).sort());
    const pinnedAll = new Map(flipped.map((n) => [n, gateAt(before.gates.get(n), old.version)!.default]));
    const kept = featureGateFindings('kueue', { version: old.version, release: before, set: pinnedAll }, { version: pinned, release: after, set: pinnedAll }, 'x');
    expect(kept.filter((f) => f.type === 'feature-gate-default-changed')).toEqual([]);
  });

  it('the gates a manager starts with: --feature-gates of its container and the configuration\'s featureGates', () => {
    const set = gatesSet([manager({ A: true, B: false })], { featureGates: { C: true } });
    expect([...set]).toEqual([['A', true], ['B', false], ['C', true]]);
    // not a Kueue image: not its gates
    const other = manager({ A: true });
    (other.spec as any).template.spec.containers[0].image = 'example.com/other:1';
    expect(gatesSet([other]).size).toBe(0);
  });
});

describe('waitForPodsReady.recoveryTimeout in the manager\'s built-in defaults', () => {
  it('is among the pinned release\'s built-in defaults, with waitForPodsReady itself, and not among the previous release\'s', () => {
    const defaults = (folder: string, version: string) => {
      const file = path.join(UPSTREAM_FACTS_DIR, folder, BUILT_IN_DEFAULTS_FILE);
      return readBuiltInDefaults(readFileSync(file, 'utf8'), version, file);
    };
    const to = defaults(`kueue-v${pinned}`, pinned);
    const from = defaults(old.folder, old.version);
    expect(to.sections.has('waitForPodsReady')).toBe(true);
    expect(to.values.get('waitForPodsReady.recoveryTimeout')).toBeDefined();
    expect(from.values.get('waitForPodsReady.recoveryTimeout')).toBeUndefined();
  });
});
