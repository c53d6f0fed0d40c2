import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { ClusterState } from './state';
import { InputError } from '../errors';
import { Manifest } from '../render/manifest';

/**
 * Largest snapshot read (bytes). A complete `kubectl get ... -o yaml` of an Instant Cluster with its
 * CRDs (their schemas included) is a few MiB; 64 MiB leaves room for large clusters and still
 * refuses a wrong file (a disk image, a log) before parsing it.
 */
export const MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024;

/** Reads a regular file of at most `max` bytes as UTF-8; anything else is bad input naming the option. */
export function readBoundedFile(file: string, option: string, max: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    throw new InputError(`${option} ${file}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InputError(`${option} ${file}: not a regular file`);
    if (st.size > max) throw new InputError(`${option} ${file}: ${st.size} bytes, more than the ${max} bytes a snapshot may have`);
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < st.size) {
      const n = readSync(fd, buf, off, st.size - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A Kubernetes object: apiVersion, kind and metadata.name, all strings. */
function asObject(v: unknown, where: string): Manifest {
  if (!isRecord(v)) throw new InputError(`${where}: not a Kubernetes object (expected a mapping)`);
  const meta = v.metadata;
  if (typeof v.apiVersion !== 'string' || typeof v.kind !== 'string' || !isRecord(meta) || typeof meta.name !== 'string') {
    throw new InputError(`${where}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
  }
  return v as unknown as Manifest;
}

/**
 * Parses a snapshot: multi-document YAML (or JSON) of what `kubectl get ... -o yaml` prints, `kind: List`
 * documents (items) or plain objects. Empty documents are skipped; a snapshot without any object, a
 * document that is not an object and a List without `items` are bad input.
 */
export function parseSnapshot(text: string, source: string): ClusterState {
  const docs = parseAllDocuments(text, { uniqueKeys: false });
  const list = Array.isArray(docs) ? docs : [docs];
  const objects: Manifest[] = [];
  list.forEach((doc, d) => {
    const where = `${source}: document ${d + 1}`;
    if (doc.errors.length > 0) throw new InputError(`${where}: not YAML: ${doc.errors[0].message.split('\n')[0]}`);
    const raw: unknown = doc.toJS({ maxAliasCount: 100 });
    if (raw === null || raw === undefined) return;
    if (isRecord(raw) && (raw.kind === 'List' || (typeof raw.kind === 'string' && raw.kind.endsWith('List') && 'items' in raw))) {
      if (!Array.isArray(raw.items)) throw new InputError(`${where}: a ${String(raw.kind)} without items`);
      raw.items.forEach((item: unknown, i: number) => {
        const o = asObject(item, `${where}, items[${i}]`);
        objects.push(o);
      });
      return;
    }
    objects.push(asObject(raw, where));
  });
  if (objects.length === 0) throw new InputError(`${source}: empty snapshot (no Kubernetes objects)`);
  return new ClusterState(source, objects);
}

/** Reads a snapshot file (bounded, regular files only). */
export function readSnapshot(file: string): ClusterState {
  return parseSnapshot(readBoundedFile(file, '--snapshot', MAX_SNAPSHOT_BYTES), file);
}
