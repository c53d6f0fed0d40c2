import { Finding, SECTION_TITLES, SECTIONS, UpgradePlan } from './types';

/** Types the text lists as one line per subject (every entry stays in the JSON). */
const GROUPED = new Set<Finding['type']>(['field-added', 'valid-under-new-crd', 'valid-under-old-crd', 'order-step']);

const files = (f: Finding): string => (f.files.length > 0 ? ` [${f.files.join(', ')}]` : '');

/** The plan as text: what changes, each section's findings by component, the notes and the summary. */
export function formatPlan(plan: UpgradePlan): string[] {
  const out: string[] = [];
  const what = plan.components.map((c) => `${c.component} ${c.from} -> ${c.to}${c.install === 'managed' ? '' : ' (not installed by this description)'}`).join(', ');
  out.push(`upgrade plan${plan.cluster ? ` for ${plan.cluster}` : ''} (${plan.mode}): ${what || (plan.mode === 'crds' ? 'the CRDs given' : 'nothing changes')}`);
  out.push(`files: ${Object.entries(plan.roots).map(([k, v]) => `${k} = ${v}`).join(', ')}`);
  SECTIONS.forEach((section, i) => {
    const all = plan.findings.filter((f) => f.section === section);
    out.push('');
    out.push(`${i + 1}. ${SECTION_TITLES[section]}${all.length === 0 ? ': nothing' : ''}`);
    for (const component of [...new Set(all.map((f) => f.component))]) {
      out.push(`  ${component}`);
      const mine = all.filter((f) => f.component === component);
      const grouped = new Map<string, Finding[]>();
      for (const f of mine) {
        if (GROUPED.has(f.type) && section !== 'order') {
          const k = `${f.type}\u0000${f.subject}`;
          grouped.set(k, [...(grouped.get(k) ?? []), f]);
          continue;
        }
        out.push(`    [${f.severity}] ${f.type}: ${f.subject}: ${f.message}${files(f)}`);
      }
      for (const [, fs] of grouped) {
        const f = fs[0];
        const detail = f.type === 'field-added' ? fs.map((x) => x.path).join(', ') : fs.map((x) => x.message).join('; ');
        out.push(`    [${f.severity}] ${f.type} (${fs.length}): ${f.subject}: ${detail}${files(f)}`);
      }
    }
  });
  if (plan.order.some((o) => o.rejected)) {
    out.push('');
    out.push('Rejected orders (what the API server refuses):');
    for (const o of plan.order.filter((x) => x.rejected)) out.push(`  ${o.component}: new CRs before their CRDs: ${o.rejected!.why}`);
  }
  if (plan.notes.length > 0) {
    out.push('');
    out.push('Notes:');
    for (const n of plan.notes) out.push(`  ${n}`);
  }
  out.push('');
  const { blockers, warnings, infos } = plan.summary;
  out.push(`${blockers > 0 ? 'BLOCKED' : 'ok'}: ${blockers} blocker(s), ${warnings} warning(s), ${infos} info finding(s)`);
  return out;
}
