import { metric, MetricName } from './metric-catalogue';

/**
 * A label matcher value: equal to a string, not equal to one, one of several strings (a regex of
 * escaped literals), or the values of a (multi-value) Grafana dashboard variable.
 */
export type MatcherValue = string | { readonly oneOf: readonly string[] } | { readonly not: string } | { readonly variable: string };

/** A PromQL string literal (double-quoted, with `\` and `"` escaped). */
export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Escapes RE2 metacharacters, so a value matches only itself inside a regex matcher. */
function regexLiteral(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A vector selector of a catalogued metric, e.g. `series('kube_node_status_allocatable', { resource: 'nvidia_com_gpu' })`.
 * Label values are escaped, so model values (queue names, HCA names) never break the query.
 */
export function series(name: MetricName, matchers: Readonly<Record<string, MatcherValue>> = {}): string {
  const parts = Object.entries(matchers).map(([label, value]) => {
    if (typeof value === 'string') return `${label}=${quote(value)}`;
    if ('not' in value) return `${label}!=${quote(value.not)}`;
    if ('variable' in value) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(value.variable)) throw new Error(`series(${name}): "${value.variable}" is not a variable name`);
      return `${label}=~"$${value.variable}"`;
    }
    if (value.oneOf.length === 0) throw new Error(`series(${name}): label ${label} needs at least one value`);
    return `${label}=~${quote(value.oneOf.map(regexLiteral).join('|'))}`;
  });
  return parts.length === 0 ? metric(name) : `${metric(name)}{${parts.join(', ')}}`;
}
