import { Rule, Violation } from './rule';
import { jsonDifferences } from '../json';
import { describeObject, Manifest, objectId } from '../render/manifest';

/** Fields named per object in a finding: the first few tell the cause (a random secret, the checksum that follows it). */
const FIELDS_SHOWN = 4;

/** The id of the one rule that reads the second render of each Helm source. */
export const RENDER_DETERMINISTIC = 'render-deterministic';

/**
 * Argo CD renders a Helm Application again on every refresh and compares the result with the cluster: a chart that
 * renders something else each time (`randAlphaNum`, `now`, a `lookup` that `helm template` answers with nothing, a
 * generated certificate) is OutOfSync for ever, and with automated sync every refresh re-applies it: a new password,
 * a restart. Every Helm source is rendered twice with its own values, the second time afresh; any difference is an
 * error naming the object and the field.
 */
const renderDeterministic: Rule = {
  id: RENDER_DETERMINISTIC,
  severity: 'error',
  summary: 'every Helm Application renders the same twice with its own values (no random values, time, lookup fallbacks or generated certificates: each would be drift on every refresh)',
  check(index) {
    const out: Violation[] = [];
    for (const second of index.renders?.reruns ?? []) {
      if (second.type !== 'helm') continue;
      const first = index.renders?.sources.find((r) => r.application === second.application && r.index === second.index);
      // the first render's problem is application-renders' finding; a second render that fails where the first did
      // not is this rule's: the chart cannot be shown to render the same twice
      if (!first || first.problem !== undefined) continue;
      if (second.problem !== undefined) {
        out.push({ message: `${second.what}: cannot be compared with a second render of it: ${second.problem.message}`, objects: [second.application] });
        continue;
      }
      const byId = (objects: readonly Manifest[]) => new Map(objects.map((o) => [objectId(o), o]));
      const [a, b] = [byId(first.objects), byId(second.objects)];
      const changes: string[] = [];
      for (const [id, o] of a) {
        const other = b.get(id);
        if (!other) {
          changes.push(`${describeObject(o)} (only in the first render)`);
          continue;
        }
        const fields = jsonDifferences(o, other, FIELDS_SHOWN + 1);
        if (fields.length > 0) {
          const shown = fields.slice(0, FIELDS_SHOWN).map((f) => f.replace(/^\./, ''));
          changes.push(`${describeObject(o)} ${shown.join(', ')}${fields.length > FIELDS_SHOWN ? ' and more' : ''}`);
        }
      }
      for (const [id, o] of b) if (!a.has(id)) changes.push(`${describeObject(o)} (only in the second render)`);
      if (changes.length === 0) continue;
      out.push({
        message: `${second.what} renders differently each time with the Application's values: ${changes.join('; ')}. Argo CD would find it OutOfSync `
          + 'on every refresh and re-apply it: give the value in the values (an existing Secret, a fixed certificate) instead of letting the chart generate it',
        objects: [second.application],
      });
    }
    return out;
  },
};

export const DETERMINISM_RULES: readonly Rule[] = [renderDeterministic];
