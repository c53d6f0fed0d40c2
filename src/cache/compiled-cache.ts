import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Script } from 'node:vm';
import type { ValidateFunction } from 'ajv';
import { removeDeadWriters, writeCacheFile } from './cache-write';
import { fileDigest, sha256 } from './digests';

export { CACHE_ENV, cacheDirProblem, defaultCacheDir, resolveCacheDir } from './cache-dir';

/** The module id under which cached validators import the validator's formats. */
export const FORMATS_MODULE = 'gpu-cluster-manifests/formats';

/** Runtime helpers ajv's generated code may import (`ajv/dist/runtime/ucs2length`, ...). */
const AJV_RUNTIME = /^ajv\/dist\/runtime\/[a-z0-9_]+$/;
const HEADER = '// gpu-cluster-manifests cache sha256=';
const DIGEST_BYTES = 32;
/** V8's compiled code is only valid for the V8 build that made it (V8 also checks, and rejects a mismatch). */
const V8_TAG = sha256(`${process.versions.v8}-${process.arch}-${process.platform}`).slice(0, 12);
const requireHere = createRequire(__filename);

/**
 * What a cached artefact derived from a file is keyed by: its path and the SHA-256 of its content
 * (never its size and mtime, which an in-place edit can keep).
 */
export function fileFingerprint(file: string): string {
  return `${path.resolve(file)}:${fileDigest(file) ?? 'missing'}`;
}

/** A validator loaded from the cache. */
export interface CachedValidator {
  readonly validate: ValidateFunction;
  /**
   * Stores V8's compiled code of the validator's functions that have run so far, so the next
   * process skips parsing and compiling them. Call it after the first validation; it does nothing
   * when the compiled code came from the cache.
   */
  saveCompiledCode(): void;
}

/**
 * A folder of derived artefacts that are expensive to rebuild (compiled validators, parsed CRD
 * files), shared by every process of the project. Best effort and safe under concurrency:
 * - an entry is looked up by a key that hashes everything it was derived from, so a stale entry
 *   is never found, only orphaned;
 * - every entry carries a checksum of its content; a truncated or corrupted entry reads as a
 *   miss (and is rebuilt and overwritten by the caller);
 * - entries are written to a unique temporary file and renamed into place, so concurrent
 *   processes never see a half-written entry (the last complete write wins);
 * - a cache that cannot be written (read-only folder, full disk) is silently skipped.
 */
export class CompiledCache {
  /** The checksum of an entry: of its key and its content, so an entry is valid only under its own key. */
  private static checksum(key: string, content: string | Buffer): Buffer {
    return createHash('sha256').update(`compiled-cache-entry\0${key}\0`).update(content).digest();
  }

  constructor(readonly dir: string) {}

  /** A stable key for the artefact derived from `parts` (any JSON-serialisable values). */
  key(kind: string, parts: readonly unknown[]): string {
    return `${kind}-${sha256(JSON.stringify(parts)).slice(0, 40)}`;
  }

  private file(key: string, ext: string): string {
    return path.join(this.dir, `${key}.${ext}`);
  }

  /** A text entry: a header line with the checksum of the key and body, then the body. */
  private readText(key: string, file: string): { body: string; digest: string } | undefined {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    const newline = text.indexOf('\n');
    if (!text.startsWith(HEADER) || newline < 0) return undefined;
    const body = text.slice(newline + 1);
    const digest = text.slice(HEADER.length, newline);
    // the checksum of the key and this exact body: what the body is identified by (hashing it again would cost as much)
    if (digest !== CompiledCache.checksum(key, body).toString('hex')) return undefined;
    return { body, digest };
  }

  /** A binary entry: the checksum of the key and payload, then the payload. */
  private readBinary(key: string, file: string): Buffer | undefined {
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch {
      return undefined;
    }
    const payload = data.subarray(DIGEST_BYTES);
    return data.length > DIGEST_BYTES && data.subarray(0, DIGEST_BYTES).equals(CompiledCache.checksum(key, payload)) ? payload : undefined;
  }

  private write(key: string, file: string, content: string | Buffer): void {
    removeDeadWriters(this.dir);
    writeCacheFile(file, typeof content === 'string'
      ? `${HEADER}${CompiledCache.checksum(key, content).toString('hex')}\n${content}`
      : Buffer.concat([CompiledCache.checksum(key, content), content]));
  }

  /** A cached JSON value, or undefined when absent or unreadable. */
  readJson<T>(key: string): T | undefined {
    const entry = this.readText(key, this.file(key, 'json'));
    if (entry === undefined) return undefined;
    try {
      return JSON.parse(entry.body) as T;
    } catch {
      return undefined;
    }
  }

  writeJson(key: string, value: unknown): void {
    this.write(key, this.file(key, 'json'), JSON.stringify(value));
  }

  /**
   * A validator compiled by an earlier process (ajv standalone code, with V8's compiled code of it
   * when present), or undefined when absent, corrupt or not loadable. `formats` is what the code
   * imports as FORMATS_MODULE; `modules`, what it imports by other ids of the validator's (its pattern engine).
   */
  readValidator(key: string, formats: object, modules: Readonly<Record<string, unknown>> = {}): CachedValidator | undefined {
    const file = this.file(key, 'js');
    const entry = this.readText(key, file);
    if (entry === undefined) return undefined;
    const load = (id: string): unknown => {
      if (id === FORMATS_MODULE) return formats;
      if (Object.prototype.hasOwnProperty.call(modules, id)) return modules[id];
      if (AJV_RUNTIME.test(id)) return requireHere(id);
      throw new Error(`cached validator ${file} imports ${id}`);
    };
    // V8 checks little more than the source's length before it uses compiled code: the code file
    // records the digest of the exact source it was made from (concurrent processes may each
    // have written their own, equivalent source).
    const codeFile = this.file(key, `v8-${V8_TAG}.bin`);
    const source = Buffer.from(entry.digest, 'hex');
    const code = this.readBinary(key, codeFile);
    const cachedData = code?.subarray(0, DIGEST_BYTES).equals(source) ? code.subarray(DIGEST_BYTES) : undefined;
    try {
      const script = new Script(`(function (require, module, exports) {${entry.body}\n})`, { filename: file, cachedData });
      const mod = { exports: {} as unknown };
      (script.runInThisContext() as (...args: unknown[]) => void)(load, mod, mod.exports);
      if (typeof mod.exports !== 'function') return undefined;
      let save = cachedData === undefined || script.cachedDataRejected === true;
      return {
        validate: mod.exports as ValidateFunction,
        saveCompiledCode: () => {
          if (save) this.write(key, codeFile, Buffer.concat([source, script.createCachedData()]));
          save = false;
        },
      };
    } catch {
      return undefined;
    }
  }

  /** Stores ajv standalone code (a CommonJS module exporting the validate function). */
  writeValidator(key: string, source: string): void {
    this.write(key, this.file(key, 'js'), source);
  }
}
