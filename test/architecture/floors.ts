import * as path from 'node:path';
import type { ICruiseOptions, IForbiddenRuleType, IViolation } from 'dependency-cruiser';

/**
 * The floors of src/, bottom to top. A module imports only from its own floor or below; within a
 * floor anything goes, as long as there is no circle. Entries are folders (`name/`) or files of src/.
 * The "Architecture" section of docs/development.md lists the same entries (imports.test.ts checks both ways).
 */
export const FLOORS: readonly { readonly name: string; readonly entries: readonly string[] }[] = [
  { name: 'foundation', entries: ['errors.ts', 'fault.ts', 'files.ts', 'json.ts', 'paths.ts', 'processes.ts', 'versions.ts', 'cache/', 'input/', 'project/'] },
  { name: 'model', entries: ['model/'] },
  { name: 'render-primitives', entries: ['render/'] },
  { name: 'validation-and-engines', entries: ['engines/', 'upstream/', 'validate/'] },
  { name: 'components', entries: ['components/'] },
  { name: 'checks', entries: ['check/'] },
  { name: 'report', entries: ['report/'] },
  { name: 'driver', entries: ['synth/', 'upgrade/'] },
  { name: 'commands', entries: ['commands/', 'preflight/', 'init/', 'verify/', 'twin/', 'launcher/', 'bin.ts', 'cli.ts', 'main.ts', 'index.ts'] },
  // TypeScript descriptions import the package (index.ts) by its name
  { name: 'descriptions', entries: ['clusters/'] },
];

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A path pattern (relative to the cruised root) matching the modules of the given entries. */
const pathOf = (entries: readonly string[]) => `^src/(${entries.map((e) => (e.endsWith('/') ? escape(e) : `${escape(e)}$`)).join('|')})`;

/** The floor a module (`src/...`) is on, by index; undefined when it is on none. */
export function floorOf(module: string): number | undefined {
  const i = FLOORS.findIndex((f) => new RegExp(pathOf(f.entries)).test(module));
  return i < 0 ? undefined : i;
}

/**
 * The rule set. Type-only imports count as well (tsPreCompilationDeps): a type imported from a
 * floor above ties the lower floor to it just the same (it cannot be read, changed or reused
 * without the upper one), and a circle of types is a circle of concepts.
 */
export const RULES: IForbiddenRuleType[] = [
  { name: 'no-circular', severity: 'error', comment: 'an import circle', from: {}, to: { circular: true } },
  ...FLOORS.slice(0, -1).map((floor, i) => ({
    name: `up-from-${floor.name}`,
    severity: 'error' as const,
    comment: `${floor.name} imports only from its own floor or below`,
    from: { path: pathOf(floor.entries) },
    to: { path: pathOf(FLOORS.slice(i + 1).flatMap((f) => f.entries)) },
  })),
  {
    name: 'no-samples-from-components',
    severity: 'error',
    comment: 'samples are leaves: components share GPU-workload code through components/, never through samples/',
    from: { path: '^src/components/', pathNot: '^src/components/(samples/|index\\.ts$)' },
    to: { path: '^src/components/samples/' },
  },
];

/** One violation, readably: `from -> to: rule` (a circle lists its way round). */
export function describeViolation(v: IViolation): string {
  const circle = v.cycle?.length ? ` (${[v.from, ...v.cycle.map((c) => c.name)].join(' -> ')})` : '';
  return `${v.from} -> ${v.to}: ${v.rule.name}${circle}`;
}

export interface Cruise {
  /** Every module cruised under src/. */
  readonly modules: readonly string[];
  readonly violations: readonly string[];
}

/** Cruises `<root>/src` with the rule set (and `<root>/tsconfig.json` when there is one). */
export async function cruiseSrc(root: string, tsconfig?: string): Promise<Cruise> {
  const { cruise } = await import('dependency-cruiser');
  const options: ICruiseOptions = {
    baseDir: root,
    validate: true,
    ruleSet: { forbidden: RULES },
    includeOnly: '^src/',
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    ...(tsconfig ? { tsConfig: { fileName: path.join(root, tsconfig) } } : {}),
  };
  const result = await cruise(['src'], options);
  if (typeof result.output === 'string') throw new Error('dependency-cruiser returned text, expected a result object');
  return {
    modules: result.output.modules.map((m) => m.source).filter((s) => s.startsWith('src/')).sort(),
    violations: result.output.summary.violations.map(describeViolation).sort(),
  };
}
