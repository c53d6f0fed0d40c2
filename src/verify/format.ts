import { formatVerifyFinding, VerifyFinding, VerifyResult } from './dry-run';

/** How much verify prints as text. */
export interface VerifyTextOptions {
  /** Every object not verified yet on a line of its own, not one line for all of them. @default false */
  readonly verbose?: boolean;
  /** The errors only. @default false */
  readonly quiet?: boolean;
}

const pending = (f: VerifyFinding) => f.type === 'crd-pending' || f.type === 'namespace-pending';

/**
 * verify's text: the errors on stderr, one line each; on stdout the warnings (the fields the API server's Warning
 * headers say it drops), what would change (one line per object), one line
 * for every object a dry run cannot check yet (its CRD or namespace comes earlier in the sync: by what brings it, each
 * on a line of its own with `verbose`), and the counts. `quiet`: the refusals only.
 */
export function verifyText(cluster: string, server: string, result: VerifyResult, options: VerifyTextOptions = {}): { out: string[]; err: string[] } {
  const err = result.findings.filter((f) => f.severity === 'error').map(formatVerifyFinding);
  if (options.quiet) return { out: [], err };
  const shown = result.findings.filter((f) => f.severity !== 'error' && (options.verbose || !pending(f)));
  const out = [...shown.filter((f) => f.severity === 'warning'), ...shown.filter((f) => f.severity !== 'warning')].map(formatVerifyFinding);
  const waiting = result.findings.filter(pending);
  if (!options.verbose && waiting.length > 0) {
    const by = new Map<string, number>();
    for (const f of waiting) by.set(f.after ?? 'an earlier step', (by.get(f.after ?? 'an earlier step') ?? 0) + 1);
    out.push(`not verified yet: ${waiting.length} object(s) whose CRD or namespace the sync brings before them, which a dry run cannot create: `
      + `${[...by].map(([after, n]) => `${n} after ${after}`).join(', ')} (--verbose names each)`);
  }
  const c = result.counts;
  const errors = err.length;
  out.push(`${errors === 0 ? 'ok' : 'REFUSED'}: ${cluster} against ${server}: ${c.checked} objects dry-run as Argo CD syncs them: `
    + `${c.refused} refused, ${c.pending} not verified yet (their CRD or namespace comes first), ${c.changed} would change, ${c.created} would be created, `
    + `${c.unchanged} unchanged${c.accepted > 0 ? `, ${c.accepted} accepted (not compared)` : ''}${c.warned > 0 ? `; ${c.warned} with a warning` : ''}`);
  return { out, err };
}
