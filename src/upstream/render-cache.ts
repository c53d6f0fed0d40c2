import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { digestOf } from './tree';
import { removeDeadWriters, writeCacheFile } from '../cache/cache-write';
import { moduleFolderDigest, packageDigest } from '../cache/digests';
import { Manifest } from '../render/manifest';

/** The checksum an entry carries: of its key and its body, so an entry is valid only under its own key. */
function checksum(key: string, body: string): string {
  return createHash('sha256').update(`render-cache-entry\0${key}\0`).update(body).digest('hex');
}

/** The bounded reader that parses the engines' output (src/input/read): its code is part of every key. */
const READER = path.join(__dirname, '..', 'input', `read${path.extname(__filename)}`);

/** What an engine printed: its objects, and (helm) the template file of each document. */
export interface RenderOutput {
  readonly objects: readonly Manifest[];
  /** helm's `# Source:` paths (`<chart>/charts/<subchart>/templates/x.yaml`), deduplicated. */
  readonly sources: readonly string[];
}

/**
 * What `helm template` and `kustomize build` printed, parsed,, kept in `<cacheDir>/renders/` as JSON (parsed
 * once: reading JSON back is far cheaper than the engine and its YAML). An entry is found by the digest of
 * everything the render depends on (the content of the chart or kustomization tree, the values, the engine
 * and its version, the arguments, the code of src/upstream/ and of the YAML parser), never by sizes or modification times; it carries a checksum of its key
 * and body, so a truncated or damaged entry, or one moved under another key (swapped entries), reads as a miss and
 * is rendered again. Writes go to a temporary file renamed into place (src/cache/cache-write.ts). Best effort: a cache that cannot be written
 * is skipped.
 */
export class RenderCache {
  constructor(readonly dir: string | undefined) {}

  /** The key of a render from everything it depends on, the code that parses and post-processes its output included. */
  key(parts: readonly unknown[]): string {
    return digestOf([moduleFolderDigest(__filename), moduleFolderDigest(READER), packageDigest('yaml'), packageDigest('js-yaml'), ...parts]).slice(0, 48);
  }

  private file(key: string): string {
    return path.join(this.dir!, 'renders', `${key}.json`);
  }

  get(key: string): RenderOutput | undefined {
    if (!this.dir) return undefined;
    let text: string;
    try {
      text = readFileSync(this.file(key), 'utf8');
    } catch {
      return undefined;
    }
    const newline = text.indexOf('\n');
    const body = text.slice(newline + 1);
    if (newline !== 64 || text.slice(0, 64) !== checksum(key, body)) return undefined;
    try {
      const output = JSON.parse(body) as RenderOutput;
      return Array.isArray(output.objects) && Array.isArray(output.sources) ? output : undefined;
    } catch {
      return undefined;
    }
  }

  put(key: string, output: RenderOutput): void {
    if (!this.dir) return;
    const file = this.file(key);
    removeDeadWriters(path.dirname(file));
    const body = JSON.stringify(output);
    writeCacheFile(file, `${checksum(key, body)}\n${body}`);
  }
}
