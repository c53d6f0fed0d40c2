import { Finding, FindingType, SECTION_TITLES, SECTIONS, UpgradePlan } from './types';

/** Types the text lists as one line per subject (every entry stays in the JSON). */
const GROUPED = new Set<Finding['type']>(['field-added', 'valid-under-new-crd', 'valid-under-old-crd', 'order-step']);

/**
 * A window of maintenance: GPU nodes drained for a kernel module reload (and the policy that coordinates it), device
 * plugins that register again, webhooks with failurePolicy Fail that refuse requests while their pods roll.
 */
const isWindow = (f: Finding): boolean => f.type === 'kernel-module-reload' || f.type === 'upgrade-policy' || f.type === 'device-plugin-restart'
  || (f.type === 'webhook-window' && f.severity !== 'info');

/** Findings that change what the cluster does once upgraded: defaults it gets, webhooks that start refusing. */
const BEHAVIOUR = new Set<FindingType>(['default-changed-unpinned', 'pinned-below-upstream', 'default-changed', 'webhook-added', 'failure-policy-changed']);

/** The most characters of a line of the summary but a blocker's (the whole finding: --verbose, or the JSON). */
export const SUMMARY_WIDTH = 240;

export interface FormatOptions {
  /** Every finding of every section, with the files it read; the order refused, the notes. @default false */
  readonly verbose?: boolean;
}

const files = (f: Finding): string => (f.files.length > 0 ? ` [${f.files.join(', ')}]` : '');

/** `text` in at most `max` characters: cut at the last clause boundary before, marked with an ellipsis. */
export function shortened(text: string, max = SUMMARY_WIDTH): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max - 2);
  const cut = Math.max(head.lastIndexOf(': '), head.lastIndexOf('; '), head.lastIndexOf(', '), head.lastIndexOf(' ('));
  return `${(cut > max / 2 ? head.slice(0, cut) : head).trimEnd()} …`;
}

/** An image by its last path segment and tag (`nvcr.io/nvidia/k8s-device-plugin:v0.20.0` -> `k8s-device-plugin:v0.20.0`). */
const imageName = (image: string): string => image.slice(image.lastIndexOf('/') + 1);

/**
 * A finding's message as the summary says it: the images it changes by their names, a long list of names left out
 * (the 43 webhooks a controller serves, counted before it) or by its first two and a count: what happens, not every
 * name (--verbose gives them).
 */
function compact(f: Finding): string {
  const images = (v: unknown) => (typeof v === 'string' ? [v] : Array.isArray(v) && v.every((x) => typeof x === 'string') ? v as string[] : undefined);
  const [from, to] = [images(f.from), images(f.to)];
  const named = !from || !to || !/[:@]/.test([...from, ...to].join(''))
    ? f.message
    : f.message.replace(`${from.join(', ')} -> ${to.join(', ')}`, `${from.map(imageName).join(', ')} -> ${to.map(imageName).join(', ')}`);
  // a list of five or more names (no spaces in any): left out in parentheses (a count names them), else its first two and a count
  return named.replace(/ \((?:[^\s(),:;]+, ){4,}[^\s(),:;]+\)/g, '').replace(/(?:[^\s(),:;]+, ){4,}[^\s(),:;]+/g, (list) => {
    const names = list.split(', ');
    return `${names.slice(0, 2).join(', ')} and ${names.length - 2} more`;
  });
}

/** One line of the summary: the component, the subject, what happens (a blocker whole, anything else shortened). */
const line = (f: Finding): string => (f.severity === 'blocker' ? `  ${f.component}: ${f.subject}: ${f.message}` : shortened(`  ${f.component}: ${f.subject}: ${compact(f)}`));

/** The steps of each component's order on one line each: `kueue: 1. outside Argo CD: ...; 2. wave 1 (app): ...`. */
function orderLines(plan: UpgradePlan): string[] {
  return plan.order.filter((o) => o.steps.length > 0).map((o) => shortened(`  ${o.component}: ${o.steps.map((s) => {
    const where = s.wave === null ? 'outside Argo CD' : `wave ${s.wave} (${s.application})`;
    const crds = s.objects.filter((x) => x.kind === 'CustomResourceDefinition').length;
    const what = crds > 0 ? `${crds} CRD(s)` : `${s.objects.length} custom resource(s)`;
    return `${s.step}. ${where}: ${what}`;
  }).join('; ')}`));
}

/**
 * The summary people read first: what blocks, the maintenance windows (drains, restarts, webhooks that refuse while
 * they roll, DaemonSets that roll), what behaves differently afterwards, the other warnings, and the order.
 */
function summary(plan: UpgradePlan): string[] {
  const blockers = plan.findings.filter((f) => f.severity === 'blocker');
  const windows = plan.findings.filter(isWindow);
  const rolls = plan.findings.filter((f) => f.type === 'daemonset-roll');
  const behaviour = plan.findings.filter((f) => BEHAVIOUR.has(f.type) && f.severity !== 'info' && f.severity !== 'blocker');
  const shown = new Set([...blockers, ...windows, ...behaviour]);
  const others = plan.findings.filter((f) => f.severity === 'warning' && !shown.has(f));
  const out: string[] = [];
  const part = (title: string, lines: readonly string[]) => {
    if (lines.length === 0) return;
    out.push('', `${title}:`, ...lines);
  };
  part('Blockers', blockers.map(line));
  const byComponent = [...new Set(rolls.map((f) => f.component))].map((c) => {
    const mine = rolls.filter((f) => f.component === c);
    // an operand of the operator's CR by its key, a chart's DaemonSet by its name
    const names = mine.map((f) => (f.subject.startsWith('DaemonSet ') ? f.subject.slice('DaemonSet '.length) : f.path?.replace(/^spec\./, '') ?? f.subject));
    return shortened(`  ${c}: ${mine.length} DaemonSet(s) roll their pods node by node (no drain): ${names.join(', ')}`);
  });
  part('Maintenance windows', [...windows.map(line), ...byComponent]);
  part('Behaviour changes', behaviour.map(line));
  part('Other warnings', others.map(line));
  part('Order', orderLines(plan));
  return out;
}

/** Every section's findings by component (info included, each with the files it read), the order refused, the notes. */
function sections(plan: UpgradePlan): string[] {
  const out: string[] = [];
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
  return out;
}

/**
 * The plan as text: what changes and the counts, then the summary (blockers, maintenance windows, behaviour changes,
 * other warnings, the order), each line but a blocker's at most SUMMARY_WIDTH characters. With `verbose`, every section's findings
 * after it, info included, with the files each read, the refused order and the notes.
 */
export function formatPlan(plan: UpgradePlan, options: FormatOptions = {}): string[] {
  const what = plan.components.map((c) => `${c.component} ${c.from} -> ${c.to}${c.install === 'managed' ? '' : ' (not installed by this description)'}`).join(', ');
  const { blockers, warnings, infos } = plan.summary;
  const out = [
    `upgrade plan${plan.cluster ? ` for ${plan.cluster}` : ''} (${plan.mode}): ${what || (plan.mode === 'crds' ? 'the CRDs given' : 'nothing changes')}`,
    `${blockers > 0 ? 'BLOCKED' : 'ok'}: ${blockers} blocker(s), ${warnings} warning(s), ${infos} info finding(s)`
      + (options.verbose ? '' : `${infos > 0 || plan.notes.length > 0 ? '; the info findings, the files read and the notes: --verbose' : ''}; every finding and the order as data: --format json`),
    ...summary(plan),
  ];
  if (!options.verbose) return out;
  out.push('', `files: ${Object.entries(plan.roots).map(([k, v]) => `${k} = ${v}`).join(', ')}`, ...sections(plan));
  return out;
}
