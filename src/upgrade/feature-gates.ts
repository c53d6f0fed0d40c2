import { ComponentName, Finding } from './types';
import { isJsonObject, valueAt } from '../json';
import { Manifest } from '../render/manifest';

/*
 * Kueue's feature gates across two releases, from each release's pkg/features/kube_features.go (vendored): a gate the
 * new release no longer defines, or locks to a default the cluster sets it against, stops the new Kueue at start (its
 * feature gate parser refuses the --feature-gates flag or the configuration's featureGates, and the manager exits);
 * a gate whose default flips changes behaviour where the cluster leaves it unset.
 */

/** One versioned spec of a gate (featuregate.VersionedSpecs). */
export interface GateSpec {
  /** The Kueue minor version it applies from (`0.19`). */
  readonly version: string;
  readonly default: boolean;
  readonly preRelease: string;
  readonly lockToDefault: boolean;
}

/** The gates of a release: name -> its versioned specs, oldest first; and the file read. */
export interface ReleaseGates {
  readonly file: string;
  readonly gates: ReadonlyMap<string, readonly GateSpec[]>;
}

/** The gates of kube_features.go's `defaultVersionedFeatureGates` map. */
export function parseFeatureGates(text: string, file: string): ReleaseGates {
  const block = /var defaultVersionedFeatureGates = map\[featuregate\.Feature\]featuregate\.VersionedSpecs\{\n([\s\S]*?)^\}/m.exec(text)?.[1];
  if (block === undefined) throw new Error(`${file}: no defaultVersionedFeatureGates map`);
  const gates = new Map<string, GateSpec[]>();
  for (const entry of block.matchAll(/^\t(\w+): \{\n([\s\S]*?)^\t\},?$/gm)) {
    const specs = [...entry[2].matchAll(/\{Version: version\.MustParse\("([\d.]+)"\), Default: (true|false), PreRelease: featuregate\.(\w+)(, LockToDefault: true)?\}/g)]
      .map((m) => ({ version: m[1], default: m[2] === 'true', preRelease: m[3], lockToDefault: m[4] !== undefined }));
    if (specs.length === 0) throw new Error(`${file}: feature gate ${entry[1]} has no spec this reader understands`);
    gates.set(entry[1], specs);
  }
  if (gates.size === 0) throw new Error(`${file}: defaultVersionedFeatureGates holds no gate`);
  return { file, gates };
}

const minor = (v: string) => v.replace(/^v/, '').split('.').slice(0, 2).map(Number);
const atOrBefore = (spec: string, release: string) => {
  const [a, b] = minor(spec);
  const [x, y] = minor(release);
  return a < x || (a === x && b <= y);
};

/** A gate's spec as a release runs it (the last spec at or before its minor version); undefined: not defined there. */
export function gateAt(specs: readonly GateSpec[] | undefined, release: string): GateSpec | undefined {
  return specs?.filter((s) => atOrBefore(s.version, release)).pop();
}

/** The gates a Kueue manager is started with: its Deployment's `--feature-gates` and its configuration's `featureGates`. */
export function gatesSet(objects: readonly Manifest[], configuration?: unknown): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const d of objects.filter((o) => o.kind === 'Deployment')) {
    const containers = valueAt(d, ['spec', 'template', 'spec', 'containers']);
    for (const c of Array.isArray(containers) ? containers : []) {
      const args = isJsonObject(c) && Array.isArray(c.args) ? c.args.map(String) : [];
      const image = isJsonObject(c) && typeof c.image === 'string' ? c.image : '';
      if (!/\/kueue:/.test(image) && !/\/kueue@/.test(image)) continue;
      for (const a of args) {
        const v = /^--feature-gates=(.*)$/.exec(a)?.[1];
        for (const pair of v?.split(',') ?? []) {
          const [name, value] = pair.split('=').map((x) => x.trim());
          if (name) out.set(name, value === 'true');
        }
      }
    }
  }
  const fromConfig = isJsonObject(configuration) && isJsonObject(configuration.featureGates) ? configuration.featureGates : {};
  for (const [name, value] of Object.entries(fromConfig)) out.set(name, value === true);
  return out;
}

/** One end: the release, its gates, and the gates the manager is started with there (undefined: not known). */
export interface GateSide {
  readonly version: string;
  readonly release: ReleaseGates;
  readonly set?: ReadonlyMap<string, boolean>;
  /** Where `set` was read (`the cluster's Deployment kueue-system/kueue-controller-manager`, `the kueue install's values`). */
  readonly setFrom?: string;
}

/**
 * The feature gate findings of an upgrade: a gate set at the old end that the new release removed or locked against
 * it (a blocker: the new manager exits at start, and the webhooks `down` names refuse their objects meanwhile), one
 * the new end sets so (the render itself), and each default that flips where the cluster leaves the gate unset.
 */
export function featureGateFindings(component: ComponentName, from: GateSide, to: GateSide, down: string): Finding[] {
  const out: Finding[] = [];
  const files = [from.release.file, to.release.file];
  const starts = (side: GateSide, name: string, value: boolean): Finding | undefined => {
    const spec = gateAt(to.release.gates.get(name), to.version);
    const subject = `feature gate ${name}`;
    const where = side === from ? `${from.setFrom ?? 'the old end'} sets ${name}=${value}` : `${to.setFrom ?? 'the new end'} sets ${name}=${value}`;
    const stop = `Kueue ${to.version} refuses to start with it (its feature gate parser exits): no admission, and ${down} until it is taken out`;
    if (!spec) {
      const was = gateAt(from.release.gates.get(name), from.version);
      return {
        section: 'config-defaults',
        type: 'feature-gate-removed',
        severity: 'blocker',
        component,
        subject,
        path: `featureGates.${name}`,
        from: was?.default,
        message: `${where}, a gate ${to.version} no longer has (${was ? `${was.preRelease} in ${from.version}` : `unknown to ${from.version} too`}): ${stop}`,
        files,
      };
    }
    if (spec.lockToDefault && value !== spec.default) {
      return {
        section: 'config-defaults',
        type: 'feature-gate-locked',
        severity: 'blocker',
        component,
        subject,
        path: `featureGates.${name}`,
        from: value,
        to: spec.default,
        message: `${where}; ${to.version} locks it to ${spec.default} (${spec.preRelease}): ${stop}`,
        files,
      };
    }
    if (spec.lockToDefault) {
      return {
        section: 'config-defaults',
        type: 'feature-gate-locked',
        severity: 'info',
        component,
        subject,
        path: `featureGates.${name}`,
        to: spec.default,
        message: `${where}, the value ${to.version} locks it to (${spec.preRelease}): the setting does nothing, and a release that removes the gate refuses it: drop it`,
        files,
      };
    }
    return undefined;
  };
  for (const [name, value] of [...(from.set ?? new Map<string, boolean>())].sort(([a], [b]) => a.localeCompare(b))) {
    const f = starts(from, name, value);
    if (f) out.push(f);
  }
  for (const [name, value] of [...(to.set ?? new Map<string, boolean>())].sort(([a], [b]) => a.localeCompare(b))) {
    if (from.set?.get(name) === value) continue;
    const f = starts(to, name, value);
    if (f) out.push(f);
  }
  // defaults that flip, where the gate is left unset at the new end
  for (const [name, specs] of [...to.release.gates].sort(([a], [b]) => a.localeCompare(b))) {
    const now = gateAt(specs, to.version);
    const was = gateAt(from.release.gates.get(name), from.version);
    if (!now || !was || now.default === was.default || to.set?.has(name)) continue;
    out.push({
      section: 'config-defaults',
      type: 'feature-gate-default-changed',
      severity: 'warning',
      component,
      subject: `feature gate ${name}`,
      path: `featureGates.${name}`,
      from: was.default,
      to: now.default,
      message: `default ${was.default} -> ${now.default} (${was.preRelease} in ${from.version}, ${now.preRelease}${now.lockToDefault ? ', locked' : ''} in ${to.version}), `
        + `${to.set === undefined ? 'not known whether the cluster sets it' : 'not set here'}: ${now.default ? 'on' : 'off'} in the cluster after the upgrade`
        + (now.lockToDefault ? ' (it cannot be set otherwise)' : ` unless --feature-gates=${name}=${was.default}`),
      files,
    });
  }
  return out;
}
