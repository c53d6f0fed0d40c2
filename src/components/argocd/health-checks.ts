import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { ARGOCD_BUILTIN_GO_HEALTH, ARGOCD_BUILTIN_LUA_HEALTH } from './builtin-health';
import { InstallationDamaged } from '../../cache/asset-sums';

/**
 * The Lua health checks this toolkit adds to Argo CD, one folder per kind in Argo CD's own layout
 * (`health/<group>/<kind>/health.lua`, `health_test.yaml`, `testdata/`), so each could be contributed upstream as
 * it is. They are read at run time: the folder ships in the package beside the compiled code (package.json `files`).
 */
export interface HealthCheck {
  readonly group: string;
  readonly kind: string;
  /** The folder of the check (health.lua, health_test.yaml, testdata/). */
  readonly dir: string;
  /** The Lua script (Lua 5.1, as Argo CD's gopher-lua runs it, with only the base, table and a safe os library). */
  readonly script: string;
}

/**
 * The folder of the checks: beside this module when it runs from src/ (tests, ts-node), and at the same path under
 * the package root when it runs compiled from lib/src/ (the sources' folder ships in the package).
 */
export const HEALTH_DIR: string = [
  path.join(__dirname, 'health'),
  path.join(__dirname, '..', '..', '..', '..', 'src', 'components', 'argocd', 'health'),
].find((d) => existsSync(d)) ?? path.join(__dirname, 'health');

/**
 * How the Application check (health/argoproj.io/Application/health.lua, goAhead and a Suspended child) ends the
 * message of a child its parent reports Healthy without it being so: the child waited gitops.waveWait (or is held on
 * purpose), and the parent's later waves go ahead of it.
 */
export const WAVES_GO_AHEAD = 'the waves after it go ahead';

/** How the Application check ends the message of a child held on purpose (Suspended: a Kueue queue held by its stop policy). */
export const HELD_ON_PURPOSE = `held on purpose, ${WAVES_GO_AHEAD}`;

let loaded: readonly HealthCheck[] | undefined;

/** Every check, sorted by group and kind (read once per process). */
export function healthChecks(): readonly HealthCheck[] {
  if (loaded) return loaded;
  if (!existsSync(HEALTH_DIR)) throw new InstallationDamaged(HEALTH_DIR, 'is missing (the Argo CD health checks it ships)');
  const out: HealthCheck[] = [];
  for (const group of readdirSync(HEALTH_DIR).sort()) {
    const groupDir = path.join(HEALTH_DIR, group);
    if (!statSync(groupDir).isDirectory()) continue;
    for (const kind of readdirSync(groupDir).sort()) {
      const dir = path.join(groupDir, kind);
      const file = path.join(dir, 'health.lua');
      if (!statSync(dir).isDirectory() || !existsSync(file)) continue;
      out.push({ group, kind, dir, script: readFileSync(file, 'utf8') });
    }
  }
  loaded = out;
  return out;
}

/** The argocd-cm key of a kind's health check (`resource.customizations.health.<group>_<kind>`, core group empty). */
export function healthKey(group: string, kind: string): string {
  return `resource.customizations.health.${group}_${kind}`;
}

/** The argocd-cm data that installs the checks of this toolkit (those `wanted`; default every one). */
export function healthCheckData(wanted: (c: HealthCheck) => boolean = () => true): Record<string, string> {
  return Object.fromEntries(healthChecks().filter(wanted).map((c) => [healthKey(c.group, c.kind), c.script]));
}

/** Whether `group`/`kind` match a `group/Kind` pattern in which `wildcard` stands for any text. */
/** The expressions of `group/kind` patterns, made once per pattern (a check asks for every kind of a tree). */
const globs = new Map<string, RegExp>();

function kindMatches(pattern: string, wildcard: string, group: string, kind: string): boolean {
  const key = `${wildcard}\0${pattern}`;
  let re = globs.get(key);
  if (!re) {
    const i = pattern.lastIndexOf('/');
    const glob = (p: string) => p.split(wildcard).map((x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*');
    re = new RegExp(`^${glob(pattern.slice(0, i))}/${glob(pattern.slice(i + 1))}$`);
    globs.set(key, re);
  }
  return re.test(`${group}/${kind}`);
}

/** Built-in health by `group/kind`, as asked. */
const builtIn = new Map<string, boolean>();
/** The built-in checks of one kind each, and those with a wildcard (`_`). */
const builtInExact = new Set([...ARGOCD_BUILTIN_GO_HEALTH, ...ARGOCD_BUILTIN_LUA_HEALTH.filter((p) => !p.includes('_'))]);
const builtInWildcards = ARGOCD_BUILTIN_LUA_HEALTH.filter((p) => p.includes('_'));

/** Whether Argo CD v3.5.1 itself knows the health of a kind (a Go check, or a Lua check it ships). */
export function hasBuiltInHealth(group: string, kind: string): boolean {
  const key = `${group}/${kind}`;
  let known = builtIn.get(key);
  if (known === undefined) {
    known = builtInExact.has(key) || builtInWildcards.some((p) => kindMatches(p, '_', group, kind));
    builtIn.set(key, known);
  }
  return known;
}

/**
 * The kinds whose health an argocd-cm's data configures: `resource.customizations.health.<group>_<kind>` keys, and
 * the `health.lua` entries of a `resource.customizations` block (`group/Kind` keys, `*` wildcards allowed).
 */
export function configuredHealth(data: Readonly<Record<string, unknown>>): (group: string, kind: string) => boolean {
  const exact = new Set<string>();
  for (const key of Object.keys(data)) {
    const m = /^resource\.customizations\.health\.(.*)_([^_]+)$/.exec(key);
    if (m && typeof data[key] === 'string' && (data[key] as string).trim() !== '') exact.add(`${m[1]}/${m[2]}`);
  }
  const patterns: string[] = [];
  const block = data['resource.customizations'];
  if (typeof block === 'string') {
    // `group/Kind:` keys at the top of the block, each with a `health.lua:` entry below it
    let current: string | undefined;
    for (const line of block.split('\n')) {
      const top = /^"?([^\s"]+\/[^\s"]+)"?:\s*$/.exec(line);
      if (top) current = top[1];
      else if (current && /^\s+health\.lua:/.test(line)) patterns.push(current);
    }
  }
  return (group, kind) => exact.has(`${group}/${kind}`) || patterns.some((p) => kindMatches(p, '*', group, kind));
}
