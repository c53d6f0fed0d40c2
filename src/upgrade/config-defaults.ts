import { ComponentName, Finding } from './types';
import { isJsonObject } from '../json';

/**
 * Config defaults: what a chart's values.yaml (and, for a configuration file a value holds whole, the manager's
 * built-in defaults, as its own defaulting code gives them) changes between two releases, against what this description pins (the
 * install Application's values). A changed default that is not pinned here changes the cluster; a pinned value that
 * is now below the upstream default holds the cluster back. Images and tags are left to the impact sections.
 */

/** Leaves of a values tree by dotted path: scalars, lists and empty mappings. */
export function flatten(v: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (isJsonObject(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) flatten(x, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix !== '') {
    out.set(prefix, v);
  }
  return out;
}

/** Image coordinates: the impact sections say what they do. */
function isImageLeaf(path: string, value: unknown): boolean {
  const last = path.split('.').pop() ?? '';
  if (['version', 'tag', 'image', 'repository', 'digest', 'imageTag'].includes(last)) return true;
  return typeof value === 'string' && /^[\w.-]+(:\d+)?\/[\w./-]+[:@][\w.-]+$/.test(value);
}

const show = (v: unknown): string => (v === undefined ? 'unset' : JSON.stringify(v));

/** How a changed default is judged: the path, old and new default, what is pinned, the files read, notes. */
type Classify = (
  path: string, x: unknown, y: unknown, pin: { pinned: boolean; value?: unknown }, files: readonly string[], note?: string, unpinned?: string,
) => void;

/** The number of a value, when it is one (`300`, `"300.0"`, Go's `300.0`). */
function numberOf(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

/** The file of a release's built-in configuration defaults in its folder of src/upstream/facts/. */
export const BUILT_IN_DEFAULTS_FILE = 'config-defaults.json';

/**
 * A manager's built-in configuration defaults, as its own defaulting code gives them to an empty configuration
 * (src/upstream/facts/<release folder>/config-defaults.json, printed by test/upstream/kueue-defaults/).
 */
export interface BuiltInDefaults {
  readonly file: string;
  /** Configuration path (JSON names: `clientConnection.qps`) -> its default value. */
  readonly values: ReadonlyMap<string, unknown>;
  /** Sections the defaulting creates when absent (`waitForPodsReady` from Kueue v0.19): on by default. */
  readonly sections: ReadonlySet<string>;
}

/**
 * Reads a release's built-in defaults: `release` must be the release the file says it holds; `name`: the file as
 * findings name it. A file of another shape or release throws.
 */
export function readBuiltInDefaults(text: string, release: string, name: string): BuiltInDefaults {
  const facts = JSON.parse(text) as unknown;
  const configuration = isJsonObject(facts) ? facts.configuration : undefined;
  if (!isJsonObject(facts) || !isJsonObject(configuration)) throw new Error(`${name}: no configuration object`);
  if (typeof facts.release !== 'string' || facts.release.replace(/^v/, '') !== release.replace(/^v/, '')) {
    throw new Error(`${name}: the defaults of ${String(facts.release)}, not of ${release}`);
  }
  const sections = Object.entries(configuration).filter(([, v]) => isJsonObject(v)).map(([k]) => k);
  return { file: name, values: flatten(configuration), sections: new Set(sections) };
}

/** What a section of the manager's configuration does once it is on, for the finding that says it turns on. */
const SECTION_EFFECTS: Readonly<Record<string, string>> = {
  waitForPodsReady: 'Kueue evicts and requeues an admitted Workload whose pods are not all ready within timeout, and a running one whose pods '
    + 'stop being ready for recoveryTimeout (a node lost, an image pull stuck), with the backoff of requeuingStrategy',
};

/** One end of the comparison: the chart's default values, and a configuration file's built-in defaults. */
export interface DefaultsSide {
  readonly version: string;
  readonly values: unknown;
  readonly valuesFile: string;
  readonly builtIn?: BuiltInDefaults;
}

export interface ConfigFileValue {
  /** The dotted values path holding the whole file as YAML. */
  readonly value: string;
  readonly parse: (text: string) => unknown;
}

/**
 * The findings of the config-defaults section. `pinned`: the install Application's values (undefined: this
 * description does not install the component, so nothing is pinned here).
 */
export function configDefaults(
  component: ComponentName, from: DefaultsSide, to: DefaultsSide, pinned: unknown, configFile?: ConfigFileValue,
): Finding[] {
  const out: Finding[] = [];
  const a = flatten(from.values);
  const b = flatten(to.values);
  const p = pinned === undefined ? undefined : flatten(pinned);
  const files = [...new Set([from.valuesFile, to.valuesFile])];
  // pinned: the path itself, or a scalar or list above it that replaces the whole subtree
  const pinnedValue = (map: ReadonlyMap<string, unknown> | undefined, path: string): { pinned: boolean; value?: unknown } => {
    if (!map) return { pinned: false };
    if (map.has(path)) return { pinned: true, value: map.get(path) };
    const parts = path.split('.');
    for (let i = parts.length - 1; i > 0; i--) {
      const up = parts.slice(0, i).join('.');
      if (map.has(up)) return { pinned: true, value: map.get(up) };
    }
    return { pinned: false };
  };
  const classify: Classify = (path, x, y, pin, fileList, note = '', unpinned) => {
    const change = `${show(x)} -> ${show(y)}`;
    if (pin.pinned) {
      const v = numberOf(pin.value);
      const up = numberOf(y);
      if (v !== undefined && up !== undefined && v < up) {
        out.push({ section: 'config-defaults', type: 'pinned-below-upstream', severity: 'warning', component, subject: path, path, from: x, to: y, message: `upstream's default ${change} (${from.version} -> ${to.version}), pinned here at ${show(pin.value)}, now below it${note}`, files: fileList });
      } else {
        out.push({ section: 'config-defaults', type: 'default-changed-pinned', severity: 'info', component, subject: path, path, from: x, to: y, message: `upstream's default ${change}; pinned here at ${show(pin.value)}${note}`, files: fileList });
      }
    } else if (x === undefined) {
      out.push({ section: 'config-defaults', type: 'default-added', severity: 'info', component, subject: path, path, to: y, message: `new, default ${show(y)}${pinned === undefined ? '' : ' (not set here)'}${note}`, files: fileList });
    } else {
      const what = unpinned ?? (pinned === undefined ? '' : ', not pinned here: the cluster gets the new value');
      out.push({ section: 'config-defaults', type: 'default-changed-unpinned', severity: 'warning', component, subject: path, path, from: x, to: y, message: `upstream's default ${change} (${from.version} -> ${to.version})${what}${note}`, files: fileList });
    }
  };
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(path);
    const y = b.get(path);
    if (JSON.stringify(x) === JSON.stringify(y) || (y === undefined) || isImageLeaf(path, y)) continue;
    if (configFile && path === configFile.value) continue;
    classify(path, x, y, pinnedValue(p, path), files);
  }
  if (configFile) out.push(...configFileDefaults(component, from, to, pinned, configFile, classify));
  return out;
}

/**
 * A configuration file a value holds whole (Kueue's manager configuration): its keys as the chart's file and the
 * manager's built-in defaults change them. A file this description pins replaces the chart's: a key it does not
 * set falls back to the built-in default (its defaulting code's), not to the chart's file.
 */
function configFileDefaults(
  component: ComponentName, from: DefaultsSide, to: DefaultsSide, pinned: unknown, configFile: ConfigFileValue,
  classify: Classify,
): Finding[] {
  const doc = (values: unknown) => {
    const text = flatten(values).get(configFile.value);
    return typeof text === 'string' ? flatten(configFile.parse(text)) : new Map<string, unknown>();
  };
  const a = doc(from.values);
  const b = doc(to.values);
  const pinnedText = pinned === undefined ? undefined : flatten(pinned).get(configFile.value);
  const own = typeof pinnedText === 'string' ? flatten(configFile.parse(pinnedText)) : undefined;
  const pin = (path: string) => {
    if (!own) return { pinned: false };
    if (own.has(path)) return { pinned: true, value: own.get(path) };
    const parts = path.split('.');
    for (let i = parts.length - 1; i > 0; i--) if (own.has(parts.slice(0, i).join('.'))) return { pinned: true, value: own.get(parts.slice(0, i).join('.')) };
    return { pinned: false };
  };
  const label = (path: string) => `${configFile.value}: ${path}`;
  const builtInFiles = [from.builtIn?.file, to.builtIn?.file].filter((f): f is string => f !== undefined);
  const files = [...new Set([from.valuesFile, to.valuesFile])];
  const seen = new Set<string>();
  const replaced = own !== undefined
    ? ' in the chart\'s configuration file; this description\'s configuration replaces that file and does not set it: the manager\'s built-in default applies'
    : undefined;
  // sections the new release creates when absent: one finding each, with their settings
  const newSections = from.builtIn && to.builtIn ? [...to.builtIn.sections].filter((s) => !from.builtIn!.sections.has(s)).sort() : [];
  const inNewSection = (path: string) => newSections.some((s) => path.startsWith(`${s}.`));
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(path);
    const y = b.get(path);
    if (JSON.stringify(x) === JSON.stringify(y) || y === undefined || isImageLeaf(path, y)) continue;
    seen.add(path);
    const built = to.builtIn?.values.get(path);
    const builtNote = built !== undefined ? ` (built in: ${show(from.builtIn?.values.get(path))} -> ${show(built)})` : '';
    const p = pin(path);
    classify(label(path), x, y, p, built !== undefined ? [...files, ...builtInFiles] : files, builtNote,
      replaced && `${replaced}${built === undefined ? ' (none among its built-in defaults: the controller library\'s)' : ''}`);
  }
  const out: Finding[] = [];
  if (!from.builtIn || !to.builtIn) return out;
  // the built-in defaults themselves: values and sections that change with the manager
  for (const path of [...new Set([...from.builtIn.values.keys(), ...to.builtIn.values.keys()])].sort()) {
    const x = from.builtIn.values.get(path);
    const y = to.builtIn.values.get(path);
    if (JSON.stringify(x) === JSON.stringify(y) || y === undefined || seen.has(path) || inNewSection(path)) continue;
    seen.add(path);
    classify(label(path), x, y, pin(path), builtInFiles, ' (the manager\'s built-in default)');
  }
  for (const section of newSections) {
    const settings = [...to.builtIn.values].filter(([k]) => k.startsWith(`${section}.`)).map(([k, v]) => `${k} ${show(v)}`);
    const p = pin(section).pinned || [...(own?.keys() ?? [])].some((k) => k.startsWith(`${section}.`));
    out.push({
      section: 'config-defaults',
      type: p ? 'default-changed-pinned' : 'default-changed-unpinned',
      severity: p ? 'info' : 'warning',
      component,
      subject: label(section),
      path: label(section),
      from: 'off',
      to: 'on',
      message: `on by default from ${to.version} (built in${settings.length > 0 ? `: ${settings.join(', ')}` : ''}; off before)${SECTION_EFFECTS[section] ? `: ${SECTION_EFFECTS[section]}` : ''}`
        + (p ? ', configured here' : own !== undefined ? ', and this description\'s configuration does not set it: it is on in the cluster after the upgrade' : ''),
      files: builtInFiles,
    });
  }
  return out;
}
