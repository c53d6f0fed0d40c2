import { readFileSync, writeSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import * as path from 'node:path';
import { serialize } from 'node:v8';
import { defineCluster } from './define';
import { killTagged, RUN_TOKEN_ENV } from '../processes';

/**
 * The process a TypeScript description runs in (started by load-typescript.ts, which bounds its
 * time and memory): reads the request on stdin, evaluates the description, and answers on file
 * descriptor 3 (stdout and stderr stay the description's own): `V` and the value (v8 serialised),
 * `E` and the problems (JSON), or `M` when memory ran out. Whatever the description does to this process (exit, loop,
 * allocate, leave a timer running) cannot reach the CLI's.
 */

/** The request load-typescript.ts writes on stdin. */
export interface SandboxRequest {
  /** The description file (messages, relative imports when it is transpiled). */
  readonly file: string;
  /** Its compiled twin in lib/, when current; else `source` is transpiled. */
  readonly twin?: string;
  readonly source?: string;
  /** The project root: where the `typescript` package is found. */
  readonly root: string;
  readonly packageName: string;
  /** What the answer starts with: the loader takes nothing else from the answer channel. */
  readonly nonce: string;
}

export const RESULT_FD = 3;

const exit = process.exit.bind(process);

class Refused extends Error {
  constructor(readonly messages: string[]) {
    super(messages.join('; '));
  }
}

let nonce = '';

function answer(tag: 'V' | 'E' | 'M', body: Buffer = Buffer.alloc(0)): never {
  // what the description started ends before the answer (it would hold the output open, or outlive the command)
  const token = process.env[RUN_TOKEN_ENV];
  if (token) killTagged(token);
  const data = Buffer.concat([Buffer.from(nonce, 'latin1'), Buffer.from(tag), body]);
  let off = 0;
  while (off < data.length) off += writeSync(RESULT_FD, data, off);
  return exit(0);
}

/** Strips the types (no type-check: the compiler does that for src/; zod validates the value). */
function transpile(root: string, file: string, source: string): string {
  let ts: typeof import('typescript');
  try {
    ts = createRequire(path.join(root, 'package.json'))('typescript');
  } catch {
    throw new Refused(['a TypeScript description needs the "typescript" package, which is not installed here: npm install --save-dev typescript (or describe the cluster in YAML)']);
  }
  const out = ts.transpileModule(source, {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true },
  });
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    // one message per place: the parser may report the same problem more than once
    throw new Refused([...new Set(errors.map((d) => {
      const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
      return `invalid TypeScript${at ? ` (line ${at.line + 1})` : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    }))]);
  }
  return out.outputText;
}

function evaluate(request: SandboxRequest): unknown {
  const filename = request.twin ?? request.file;
  const code = request.twin ? readFileSync(request.twin, 'utf8') : transpile(request.root, request.file, request.source ?? '');
  // `import ... from 'gpu-cluster-manifests'`: defineCluster at once, the rest of the library when used
  const library = new Proxy({ defineCluster } as Record<string | symbol, unknown>, {
    get(target, prop) {
      if (prop in target) return target[prop];
      return (createRequire(__filename)('../index') as Record<string | symbol, unknown>)[prop];
    },
  });
  const mod = new Module(filename);
  mod.filename = filename;
  mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(path.dirname(filename));
  const load = mod.require.bind(mod);
  mod.require = ((id: string) => (id === request.packageName ? library : load(id))) as NodeJS.Require;
  try {
    (mod as unknown as { _compile(code: string, file: string): void })._compile(code, filename);
  } catch (e) {
    if (e instanceof RangeError && /allocation failed/i.test(e.message)) answer('M');
    throw new Refused([`cannot evaluate the description: ${String((e as Error)?.message ?? e).split('\n')[0]}`]);
  }
  const exported = mod.exports as Record<string, unknown> | undefined;
  if (!exported || !('default' in exported)) throw new Refused([`expected \`export default defineCluster({ ... })\` (import { defineCluster } from '${request.packageName}')`]);
  return exported.default;
}

/** Handles of the process's own stdio: not the description's work. */
const STDIO = new Set(['TTYWrap', 'PipeWrap', 'FSReqCallback']);

function main(): void {
  const request = JSON.parse(readFileSync(0, 'utf8')) as SandboxRequest;
  nonce = request.nonce;
  process.exit = ((code?: number) => {
    throw new Error(`the description calls process.exit(${code ?? ''}); a description only exports its value`);
  }) as typeof process.exit;
  let value: unknown;
  try {
    value = evaluate(request);
    const running = process.getActiveResourcesInfo().filter((r) => !STDIO.has(r));
    if (running.length > 0) {
      const what = [...new Set(running)].map((r) => (r === 'Timeout' ? 'a timer (setInterval/setTimeout)' : r === 'Immediate' ? 'a setImmediate' : r)).join(', ');
      throw new Refused([`the description leaves work running after its value is exported (${what}): a description only computes and exports its value`]);
    }
  } catch (e) {
    answer('E', Buffer.from(JSON.stringify(e instanceof Refused ? e.messages : [`cannot evaluate the description: ${String((e as Error)?.message ?? e)}`])));
  }
  let data: Buffer;
  try {
    data = serialize(value);
  } catch (e) {
    answer('E', Buffer.from(JSON.stringify([`the default export is not plain data (${(e as Error).message}): export the description's fields, not functions, promises or class instances`])));
  }
  answer('V', data);
}

if (require.main === module) main();
