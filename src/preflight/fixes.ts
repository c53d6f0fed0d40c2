import { stringify } from 'yaml';
import { setValueAt } from '../json';
import { ClusterDescription } from '../model/description';
import { DescriptionError, parseDescription } from '../model/load';

/** A value as it is written after `field: ` in a YAML description (flow style, one line). */
function yamlValue(v: unknown): string {
  return stringify(v, { collectionStyle: 'flow', lineWidth: 0 }).trimEnd();
}

/**
 * The fix `set a.b: value [and c.d: value] in the description`, or undefined when the description
 * schema refuses one of the values there (a value read from a cluster need not be one the
 * description accepts): then the rule suggests something else. Only problems of the edited fields
 * count; the description itself is valid (it was loaded).
 */
export function descriptionEdit(description: ClusterDescription, edits: Readonly<Record<string, unknown>>): string | undefined {
  const edited = structuredClone(description) as unknown as Record<string, unknown>;
  for (const [p, v] of Object.entries(edits)) setValueAt(edited, p, v);
  try {
    parseDescription(edited);
  } catch (e) {
    if (!(e instanceof DescriptionError)) throw e;
    const touched = (issue: string) => Object.keys(edits).some((p) => issue === p || issue.startsWith(`${p}.`) || issue.startsWith(`${p}[`));
    if (e.issues.some((i) => touched(i.path))) return undefined;
  }
  return `set ${Object.entries(edits).map(([p, v]) => `${p}: ${yamlValue(v)}`).join(' and ')} in the description`;
}

/** An edit with the reason after it (`set x: y in the description (why)`), or undefined without an edit. */
export function withWhy(edit: string | undefined, why: string): string | undefined {
  return edit && `${edit} (${why})`;
}
