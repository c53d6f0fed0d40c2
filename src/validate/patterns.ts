import { createRequire } from 'node:module';
import type { RegExpEngine } from 'ajv/dist/types';
import { ContentMemo } from '../cache/content-memo';

/** re2js only when a pattern is compiled (a validator without one never needs it). */
const re2 = (): typeof import('re2js') => createRequire(__filename)('re2js');

/**
 * The module id under which cached validators import this module (src/cache/compiled-cache.ts resolves it): their
 * code calls the engine by it, so a validator read from the cache evaluates patterns as one compiled here does.
 */
export const PATTERNS_MODULE = 'gpu-cluster-manifests/patterns';

/** The characters of the values whose results one pattern keeps (ContentMemo): a validator holds hundreds of patterns. */
const PATTERN_VALUE_CHARS = 16 * 1024;

/**
 * ajv's engine for `pattern` and `patternProperties`: RE2, as the API server evaluates a CRD's patterns (Go's
 * regexp), in time linear in the input. JavaScript's backtracking engine takes time exponential in the input for
 * a pattern such as `^(a+)+$` (27 characters: 27 s, each one more doubling it); RE2 has no backtracking. RE2 also
 * reads Go's syntax (`(?i)`), which JavaScript refuses; it has no backreferences or lookarounds, which the API
 * server refuses too. Patterns match anywhere in the value unless anchored, as JSON Schema says (RegExp.test).
 */
export const re2Engine: RegExpEngine = Object.assign(
  (pattern: string) => {
    // Compiled on its first test, not when the validator's code loads (a cached validator's code builds every pattern
    // of its schema at its top level, and an object reaches few of them); ajv shares one among the places using this text.
    let re: ReturnType<ReturnType<typeof re2>['RE2JS']['compile']> | undefined;
    // the values a pattern is tested on repeat, in every cluster of a fleet (names, images, ports): each is tested once
    const found = new ContentMemo<boolean>(PATTERN_VALUE_CHARS);
    return {
      test: (s: string) => found.get(typeof s === 'string' ? s : undefined, () => (re ??= re2().RE2JS.compile(pattern)).matcher(s).find()),
      toString: () => `re2:${pattern}`,
    };
  },
  { code: `require(${JSON.stringify(PATTERNS_MODULE)}).re2Engine` },
);

/** Patterns compiled for re2Find, the last used kept (a CRD's or policy's rules name a few, again and again). */
const compiled = new Map<string, ReturnType<ReturnType<typeof re2>['RE2JS']['compile']>>();
const KEPT_PATTERNS = 256;

/**
 * Whether RE2 finds `pattern` anywhere in `text`, in time linear in the text: CEL's `matches` as the API server
 * evaluates it (Go's regexp). Throws when RE2 does not compile the pattern.
 */
export function re2Find(pattern: string, text: string): boolean {
  let re = compiled.get(pattern);
  if (re) compiled.delete(pattern);
  else re = re2().RE2JS.compile(pattern);
  compiled.set(pattern, re);
  if (compiled.size > KEPT_PATTERNS) compiled.delete(compiled.keys().next().value!);
  return re.matcher(text).find();
}

/** Whether RE2 (the API server's engine) compiles a pattern; a CRD with one it does not is refused by the API server. */
export function re2Compiles(pattern: string): boolean {
  try {
    re2().RE2JS.compile(pattern);
    return true;
  } catch {
    return false;
  }
}
