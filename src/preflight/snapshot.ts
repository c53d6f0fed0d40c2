import { asStateObject, checkApiVersions, checkDuplicates, nodeLimitExceeded, ReadObject } from './objects';
import { ClusterState } from './state';
import { InputError, printable } from '../errors';
import { asInputError, decodeInput, parseInputYaml, readInputBytes } from '../input/read';
import { isJsonObject } from '../json';

/** A `kind: List` (or `kind: <Kind>List` with items), as `kubectl get ... -o yaml` writes for several objects. */
function isList(v: unknown): v is Record<string, unknown> {
  return isJsonObject(v) && (v.kind === 'List' || (typeof v.kind === 'string' && v.kind.endsWith('List') && 'items' in v));
}

/** The objects of a snapshot's documents, each with where it was read. */
function snapshotObjects(docs: readonly unknown[], label: string, maxNodes: number): ReadObject[] {
  const objects: ReadObject[] = [];
  let nodes = 0;
  const add = (o: ReadObject) => {
    objects.push(o);
    if (o.object.kind === 'Node' && o.object.apiVersion === 'v1' && ++nodes > maxNodes) throw nodeLimitExceeded(label, maxNodes);
  };
  docs.forEach((doc, d) => {
    const where = `${label}: document ${d + 1}`;
    if (doc === null || doc === undefined) return;
    if (!isList(doc)) {
      add({ object: asStateObject(doc, where), where });
      return;
    }
    if (!Array.isArray(doc.items)) throw new InputError(`${where}: a ${printable(String(doc.kind))} without items`);
    doc.items.forEach((item: unknown, i: number) => {
      const at = `${where}, items[${i}]`;
      if (isList(item)) {
        throw new InputError(`${at}: a ${printable(String(item.kind))} inside a ${printable(String(doc.kind))}, which kubectl never writes: `
          + 'put its items into the outer list, or each list into its own document (--- between them)');
      }
      add({ object: asStateObject(item, at), where: at });
    });
  });
  if (objects.length === 0) throw new InputError(`${label}: empty snapshot (no Kubernetes objects)`);
  checkApiVersions(objects);
  checkDuplicates(objects);
  return objects;
}

/**
 * Parses a snapshot: multi-document YAML (or JSON) of what `kubectl get ... -o yaml` prints, `kind: List`
 * documents (items) or plain objects. Empty documents are skipped; a snapshot without any object, a
 * document that is not an object, a List without `items` or inside another, an object given twice
 * and an API version the state does not serve are bad input. `label` names it in messages.
 */
export function parseSnapshot(text: string, source: string, label = source, maxNodes = Infinity): ClusterState {
  const docs = asInputError(label, () => parseInputYaml(source, text, 'snapshot', true));
  return new ClusterState(source, snapshotObjects(docs, label, maxNodes).map((o) => o.object));
}

/** Reads a snapshot file with the input limits of a snapshot (src/input/limits.ts); `maxNodes`: refused beyond, counted while read. */
export function readSnapshot(file: string, maxNodes = Infinity): ClusterState {
  const label = `--snapshot ${file}`;
  return parseSnapshot(asInputError(label, () => decodeInput(file, readInputBytes(file, 'snapshot'))), file, label, maxNodes);
}
