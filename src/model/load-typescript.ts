import { readFileSync, statSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import * as path from 'node:path';
import { defineCluster } from './define';
import type { DescriptionIssue } from './load';
import { PROJECT_ROOT } from '../paths';

/** The package name a TypeScript description imports `defineCluster` from. */
export const PACKAGE_NAME = 'gpu-cluster-manifests';

/** A TypeScript description that cannot be evaluated (the caller turns the issues into a DescriptionError). */
export class TypeScriptDescriptionFailed extends Error {
  constructor(readonly issues: DescriptionIssue[]) {
    super(issues.map((i) => i.message).join('; '));
  }
}

const fail = (message: string): never => {
  throw new TypeScriptDescriptionFailed([{ path: '', message }]);
};

/**
 * JavaScript of a description under src/: its compiled twin in lib/ when that is at least as new
 * (the npm scripts compile changed sources first), so a run needs no TypeScript compiler.
 */
function compiledTwin(file: string): { code: string; filename: string } | undefined {
  const rel = path.relative(PROJECT_ROOT, file);
  if (rel.startsWith('..') || path.isAbsolute(rel) || !rel.startsWith(`src${path.sep}`)) return undefined;
  const twin = path.join(PROJECT_ROOT, 'lib', rel.replace(/\.ts$/, '.js'));
  const js = statSync(twin, { throwIfNoEntry: false });
  if (!js || js.mtimeMs < statSync(file).mtimeMs) return undefined;
  return { code: readFileSync(twin, 'utf8'), filename: twin };
}

/** Strips the types (no type-check: the compiler does that; zod validates the value). */
function transpile(file: string, source: string): string {
  let ts: typeof import('typescript');
  try {
    ts = createRequire(path.join(PROJECT_ROOT, 'package.json'))('typescript');
  } catch {
    return fail('a TypeScript description needs the "typescript" package (npm install --save-dev typescript)');
  }
  const out = ts.transpileModule(source, {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true },
  });
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    throw new TypeScriptDescriptionFailed(errors.map((d) => {
      const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
      return { path: '', message: `invalid TypeScript${at ? ` (line ${at.line + 1})` : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}` };
    }));
  }
  return out.outputText;
}

/**
 * What `import ... from 'gpu-cluster-manifests'` gives a description: defineCluster at once, the
 * rest of the library only when the description uses it (loading it all costs start-up time).
 */
const library = new Proxy({ defineCluster } as Record<string | symbol, unknown>, {
  get(target, prop) {
    if (prop in target) return target[prop];
    return (createRequire(__filename)('../index') as Record<string | symbol, unknown>)[prop];
  },
});

/** Evaluates a `src/clusters/<name>.ts` description and returns its default export (the raw description). */
export function evaluateTypeScriptDescription(file: string, source: string): unknown {
  const abs = path.resolve(file);
  // relative imports resolve from the file that runs: the twin in lib/, or the description itself
  const { code, filename } = compiledTwin(abs) ?? { code: transpile(abs, source), filename: abs };
  const mod = new Module(filename);
  mod.filename = filename;
  mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(path.dirname(filename));
  const load = mod.require.bind(mod);
  mod.require = ((id: string) => (id === PACKAGE_NAME ? library : load(id))) as NodeJS.Require;
  try {
    (mod as unknown as { _compile(code: string, file: string): void })._compile(code, filename);
  } catch (e) {
    fail(`cannot evaluate the description: ${(e as Error).message.split('\n')[0]}`);
  }
  const exported = mod.exports as Record<string, unknown> | undefined;
  if (!exported || !('default' in exported)) return fail(`expected \`export default defineCluster({ ... })\` (import { defineCluster } from '${PACKAGE_NAME}')`);
  return exported.default;
}
