import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { listTree } from '../cache/digests';

/** The files of a chart folder (its subcharts' included), relative to it with `/`, sorted. */
function chartFiles(dir: string): string[] {
  return listTree(dir).map((f) => path.relative(dir, f).split(path.sep).join('/'));
}

/**
 * The file of a chart a rendered CRD comes from: the one under `crds/` or `templates/` that names it (helm prints
 * crds/ as they are, and renders the templates of a chart that keeps its CRDs there, as Kueue's does).
 */
export function crdOriginFile(chartDir: string, crdName: string): string | undefined {
  const name = new RegExp(`^\\s*name:\\s*["']?${crdName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*$`, 'm');
  return chartFiles(chartDir).find((f) => /(^|\/)(crds|templates)\//.test(f) && /\.ya?ml$/.test(f) && name.test(readFileSync(path.join(chartDir, f), 'utf8')));
}

/**
 * The values that switch on the webhook configurations of a chart's own templates: the `.Values.x.y` of each `if`
 * that guards a document holding a ValidatingWebhookConfiguration or MutatingWebhookConfiguration (the
 * Network Operator's admission controller: `operator.admissionController.enabled`). Sorted, without repeats.
 */
export function webhookGuards(chartDir: string): string[] {
  const out = new Set<string>();
  for (const f of chartFiles(path.join(chartDir, 'templates'))) {
    if (!/\.(ya?ml|tpl)$/.test(f)) continue;
    const text = readFileSync(path.join(chartDir, 'templates', f), 'utf8');
    for (const doc of text.split(/^---\s*$/m)) {
      const at = doc.search(/^kind:\s*(Validating|Mutating)WebhookConfiguration\s*$/m);
      if (at < 0) continue;
      for (const m of doc.slice(0, at).matchAll(/\{\{-?\s*if\s+(?:and\s+)?\(?\s*\.Values\.([\w.]+)/g)) out.add(m[1]);
    }
  }
  return [...out].sort();
}

/**
 * The values that switch a chart's template of an object on: the `.Values.x.y` of each `if` before the `kind:` line of
 * the document that renders `kind` named `name` (the GPU Operator v26.7 chart's `clusterPolicy.deployCR` around its
 * `cluster-policy`). Empty when no template guards it (the v26.3 chart always renders it) or none renders it.
 */
export function objectGuards(chartDir: string, kind: string, name: string): string[] {
  const out = new Set<string>();
  const kindLine = new RegExp(`^kind:\\s*${kind}\\s*$`, 'm');
  const nameLine = new RegExp(`^\\s+name:\\s*["']?${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*$`, 'm');
  for (const f of chartFiles(path.join(chartDir, 'templates'))) {
    if (!/\.(ya?ml|tpl)$/.test(f)) continue;
    const text = readFileSync(path.join(chartDir, 'templates', f), 'utf8');
    for (const doc of text.split(/^---\s*$/m)) {
      const at = doc.search(kindLine);
      if (at < 0 || !nameLine.test(doc.slice(at))) continue;
      for (const m of doc.slice(0, at).matchAll(/\{\{-?\s*if\s+(?:and\s+)?\(?\s*\.Values\.([\w.]+)/g)) out.add(m[1]);
    }
  }
  return [...out].sort();
}
