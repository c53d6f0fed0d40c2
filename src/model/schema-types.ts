import { z } from 'zod';
import { DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY, LABEL_VALUE } from './k8s-syntax';
import { parseQuantity } from './quantity';
import { maskCredentials } from '../errors';

/**
 * Reusable field types of the cluster description. Each carries the message a user sees after
 * the field path (`nodes.gpuWorkers.gpusPerNode: expected a positive integer, got "eight"`).
 */


/** The largest integer Kubernetes' int32 fields take: the default upper bound of every count. */
export const INT32_MAX = 2147483647;
/** Kubernetes supports clusters of up to 5000 nodes. */
export const MAX_NODES = 5000;
/** nvidia.com/gpu per node, MIG slices included (8 GPUs x 7 slices = 56). */
export const MAX_GPUS_PER_NODE = 256;
/** More GPUs than any described cluster can hold. */
export const MAX_GPUS = MAX_NODES * MAX_GPUS_PER_NODE;
/** Allocatable CPU (cores) and memory (bytes) of one node: far above any machine, low enough that totals stay exact. */
export const MAX_NODE_CPU = 100_000;
export const MAX_NODE_MEMORY = 2 ** 50; // 1Pi

const boundedInt = (min: number, max: number, what: string, tooBig: string) =>
  z.int({ error: `expected ${what}` }).min(min, { error: `expected ${what}` }).max(max, { error: tooBig });

/** A positive integer (at most `max`, default INT32_MAX: numbers stay exact and fit Kubernetes' int32 fields). */
export const positiveInt = (what = 'a positive integer', max = INT32_MAX) =>
  boundedInt(1, max, what, `expected ${what} of at most ${max}`);

export const nonNegativeInt = (what = 'a non-negative integer', max = INT32_MAX) =>
  boundedInt(0, max, what, `expected ${what} of at most ${max}`);

export const intRange = (min: number, max: number) => boundedInt(min, max, `an integer from ${min} to ${max}`, `expected an integer from ${min} to ${max}`);

/** A number of nodes: 1 to MAX_NODES. */
export const nodeCount = () =>
  boundedInt(1, MAX_NODES, 'a positive integer', `expected at most ${MAX_NODES} nodes (the largest cluster Kubernetes supports)`);

/** nvidia.com/gpu per node. */
export const gpusPerNode = () =>
  boundedInt(1, MAX_GPUS_PER_NODE, 'a positive integer', `expected at most ${MAX_GPUS_PER_NODE} GPUs per node`);

/** A number of GPUs (quotas, limits). */
export const gpuCount = (what = 'a non-negative number of GPUs') =>
  boundedInt(0, MAX_GPUS, what, `expected at most ${MAX_GPUS} GPUs (${MAX_NODES} nodes x ${MAX_GPUS_PER_NODE})`);

/**
 * Refinement of a node group (`count` and per-node `memory`): the group's total memory in bytes
 * must stay an exact integer (2^53 bytes, 8Pi), or the quota arithmetic would round.
 */
export function exactMemoryTotal(nodes: { count: number; memory: string }, ctx: z.RefinementCtx): void {
  let perNode: number;
  try {
    perNode = parseQuantity(nodes.memory);
  } catch {
    return; // the field's own check reports it
  }
  // out-of-range fields are reported by their own checks
  if (!Number.isInteger(nodes.count) || nodes.count < 1 || nodes.count > MAX_NODES || !(perNode > 0 && perNode <= MAX_NODE_MEMORY)) return;
  if (!Number.isSafeInteger(Math.floor(nodes.count * perNode))) {
    ctx.addIssue({
      code: 'custom',
      path: ['count'],
      message: `${nodes.count} nodes x ${nodes.memory} is more memory than the quota arithmetic keeps exact (8Pi in all); lower the count or describe the cluster in parts`,
    });
  }
}

/** A DNS-1123 label: Kubernetes names of namespaces, services, most objects. */
export const dnsLabel = () =>
  z.string({ error: 'expected a DNS-1123 label (lower-case letters, digits and "-")' })
    .max(63, { error: 'expected a DNS-1123 label of at most 63 characters' })
    .regex(DNS_LABEL, { error: 'expected a DNS-1123 label (lower-case letters, digits and "-", starting and ending with a letter or digit)' });

/** A DNS-1123 subdomain: names of cluster-scoped objects such as PriorityClasses. */
export const dnsSubdomain = () =>
  z.string({ error: 'expected a DNS-1123 subdomain' })
    .max(253, { error: 'expected a DNS-1123 subdomain of at most 253 characters' })
    .regex(DNS_SUBDOMAIN, { error: 'expected a DNS-1123 subdomain (lower-case letters, digits, "-" and ".")' });

export const labelKey = () =>
  z.string({ error: 'expected a label key' }).max(317).regex(LABEL_KEY, { error: 'expected a label key ([prefix/]name)' });

export const labelValue = () =>
  z.string({ error: 'expected a label value' }).max(63).regex(LABEL_VALUE, { error: 'expected a label value (at most 63 letters, digits, "-", "_", ".")' });

export const labels = () => z.record(labelKey(), labelValue(), { error: 'expected a map of label keys to values' });

export const nonEmptyString = (what = 'a non-empty string') =>
  z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}` });

/** Characters no Git URL, revision or repository path holds: whitespace and control characters (a line break forges a line of YAML or a message). */
const NO_SPACE = '[^\\s\\u0000-\\u001f\\u007f-\\u009f]';

/** A URL's host: a name that starts with a letter or digit (never "-": no option of ssh or git), or an IP literal, and a port. */
const URL_HOST = '(?:[A-Za-z0-9][A-Za-z0-9.-]*|\\[[0-9A-Fa-f:.]+\\])(?::[0-9]{1,5})?';
/** The user-info of a URL, as written (a user, and a password or token after a colon): its credentials are refused apart. */
const URL_USER_INFO = "[A-Za-z0-9_][A-Za-z0-9._~%!$&'()*+,;=-]*(?::[^\\s/@]*)?@";

/**
 * A repository URL of the given schemes with a host, or the scp form `user@host:path` (Git over SSH). Nothing git, ssh
 * or helm would take as an option (a user, host or path starting with "-": `ssh://-oProxyCommand=...`), no transport
 * that runs a command or reads this machine (`ext::sh ...`, `file:///etc`), no whitespace or control character.
 */
function repositoryUrlPattern(schemes: string): RegExp {
  return new RegExp(
    `^(?:(?:${schemes})://(?:${URL_USER_INFO})?${URL_HOST}(?:/${NO_SPACE}*)?`
    + `|[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:[^\\s\\u0000-\\u001f\\u007f-\\u009f-]${NO_SPACE}*)$`,
  );
}

/** A Git repository URL as Argo CD and git clone take it: https:// or http://, ssh:// (git+ssh://) or git:// with a host, or the scp form `user@host:path`. */
export const GIT_REPO_URL = repositoryUrlPattern('https?|ssh|git|git\\+ssh');

/** Schemes whose user-info is an account name (Git over SSH: `ssh://git@host/...`, `git@host:path`), not a credential. */
const SSH_URL = /^(ssh|git\+ssh):\/\/|^[^:/]+@[^:/]+:/;

/**
 * The credentials a repository URL carries in its user-info, masked (`https://***@host/...`), or undefined when it
 * carries none: any user-info of an https://, http://, git:// or oci:// URL (a token often stands as the user name),
 * a password of an SSH URL (its user name alone is the account git logs in as).
 */
export function urlCredentials(url: string): string | undefined {
  const info = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\s]*)@/.exec(url)?.[1];
  if (info === undefined || (SSH_URL.test(url) && !info.includes(':'))) return undefined;
  return maskCredentials(url);
}

/** The URL without the credentials urlCredentials finds (`https://host/...`, `ssh://git@host/...`); unchanged when it carries none. */
export function withoutUrlCredentials(url: string): string {
  if (urlCredentials(url) === undefined) return url;
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#\s]*)@/, (_, scheme: string, info: string) => (SSH_URL.test(url) ? `${scheme}${info.slice(0, info.indexOf(':'))}@` : scheme));
}

/**
 * Refuses a repository URL that carries credentials (urlCredentials): Argo CD reads a repository with the credentials of
 * its own repository Secret (argocd.argoproj.io/secret-type: repository), kubectl and helm with theirs; in the
 * description they would be rendered into dist/ (the AppProject, the Applications, the report), which is committed.
 */
export function withoutCredentials<T extends z.ZodType<string>>(schema: T): T {
  return schema.refine((url) => urlCredentials(url) === undefined, {
    error: (issue) => `holds credentials (${urlCredentials(String(issue.input))}): a repository's credentials go into Argo CD's repository Secret, `
      + 'never into the description (it is rendered into dist/, which is committed); remove the user-info',
  });
}

export const gitRepoUrl = () =>
  withoutCredentials(z.string({ error: 'expected a Git repository URL' }).regex(GIT_REPO_URL, {
    error: 'expected a Git repository URL: https://HOST/PATH, ssh://[USER@]HOST/PATH or USER@HOST:PATH (no other scheme, no leading "-", no spaces or control characters)',
  }));

/** A repository URL a mirror stands in for, or the mirror: https://, oci:// (Helm charts), ssh:// or user@host:path (Git). */
export const REPOSITORY_URL = repositoryUrlPattern('https?|oci|ssh|git|git\\+ssh');

export const repositoryUrl = () =>
  withoutCredentials(z.string({ error: 'expected a repository URL' }).regex(REPOSITORY_URL, {
    error: 'expected a repository URL (https://, oci://, ssh:// or user@host:path; no leading "-", no spaces or control characters)',
  }));

/** A Git revision (branch, tag, commit): nothing git would take as an option, no whitespace or control character. */
export const gitRevision = () =>
  z.string({ error: 'expected a Git revision' }).regex(new RegExp(`^[^\\s\\u0000-\\u001f\\u007f-\\u009f-]${NO_SPACE}*$`), {
    error: 'expected a Git revision (a branch, tag or commit; no leading "-", no spaces or control characters)',
  });

/** A folder of the Git repository: relative, never above the repository (`..`), no control characters. */
export const repoPath = () =>
  z.string({ error: 'expected a path in the repository' })
    .regex(/^[^/\\\u0000-\u001f\u007f-\u009f][^\\\u0000-\u001f\u007f-\u009f]*$/, {
      error: 'expected a path relative to the repository\'s top (dist/<name>): no leading "/", no backslashes or control characters',
    })
    .refine((p) => !p.split('/').includes('..'), { error: 'expected a path inside the repository: ".." leads out of it' });

/** An absolute filesystem path on the nodes. */
export const absolutePath = () =>
  z.string({ error: 'expected an absolute path' }).regex(/^\/[^\0]*$/, { error: 'expected an absolute path (starting with "/")' });

/** A Kubernetes quantity, as a string (`"192"`, `1800Gi`) or a plain number; positive and at most a node's worth. */
export const quantity = (what: 'cpu' | 'memory', opts: { readonly zero?: boolean } = {}) => {
  const example = what === 'cpu' ? '"192" or "500m"' : '"1800Gi"';
  const least = opts.zero ? 'non-negative' : 'positive';
  const max = what === 'cpu' ? MAX_NODE_CPU : MAX_NODE_MEMORY;
  const parsed = (v: string) => {
    try {
      return parseQuantity(v);
    } catch {
      return NaN;
    }
  };
  return z.union([z.string(), z.number()], { error: `expected a ${what} quantity such as ${example}` })
    .transform((v) => String(v))
    .refine((v) => (opts.zero ? parsed(v) >= 0 : parsed(v) > 0), { error: `expected a ${least} ${what} quantity such as ${example}` })
    .refine((v) => !(parsed(v) > max), { error: `expected at most ${what === 'cpu' ? `${MAX_NODE_CPU} cores` : '1Pi'} (more than any node has)` });
};

/** A container image reference that is pinned: a tag other than `latest`, or a digest. */
export const pinnedImage = () =>
  z.string({ error: 'expected a container image reference' })
    .regex(/^[a-z0-9][a-z0-9._\-/:]*[a-z0-9_\-]((:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})|(@sha256:[a-f0-9]{64}))$|^[a-z0-9][a-z0-9._\-/]*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[a-f0-9]{64}$/, {
      error: 'expected a pinned image reference with a tag or digest (repository:tag)',
    })
    .refine((v) => !/:latest(@|$)/.test(v), { error: 'image tag "latest" is not allowed: pin a version' });

export const taintEffect = () =>
  z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute'], { error: 'expected one of NoSchedule, PreferNoSchedule, NoExecute' });

export const taint = () => z.strictObject({
  key: labelKey().describe('Taint key.'),
  value: labelValue().optional().describe('Taint value (none: tolerated with operator Exists).'),
  effect: taintEffect().describe('Taint effect.'),
});

export const envVar = () => z.strictObject({
  name: z.string().regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/, { error: 'expected an environment variable name' }).describe('Variable name.'),
  value: z.string({ error: 'expected a string value (quote numbers)' }).describe('Variable value.'),
});

export const installMode = () =>
  z.enum(['preinstalled', 'managed'], { error: 'expected "preinstalled" or "managed"' });

/** The longest duration Go's time.Duration (int64 nanoseconds) holds: about 292 years. */
const MAX_DURATION_NS = 2n ** 63n - 1n;

/** Nanoseconds of each unit of Go's time.ParseDuration (µ as U+00B5 or U+03BC). */
const GO_UNITS: Readonly<Record<string, bigint>> = {
  ns: 1n, us: 1000n, µs: 1000n, μs: 1000n, ms: 1_000_000n, s: 1_000_000_000n, m: 60_000_000_000n, h: 3_600_000_000_000n,
};

/**
 * Go's time.ParseDuration, step for step (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`): the nanoseconds of a duration, or
 * why Go refuses it (what a Kubernetes controller reading a metav1.Duration, Kueue's configuration, would fail on at
 * its start). Sums past int64 are refused as Go refuses them.
 */
export function parseGoDuration(text: string): bigint | string {
  let s = text;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return 'an empty duration';
  let total = 0n;
  while (s !== '') {
    if (!/^[0-9.]/.test(s)) return `"${s[0]}" where a number is due`;
    const [, whole, fraction, rest] = /^([0-9]*)(?:\.([0-9]*))?(.*)$/s.exec(s)!;
    if (whole === '' && (fraction === undefined || fraction === '')) return 'a unit without a number';
    const unit = /^[^0-9.]*/.exec(rest)![0];
    s = rest.slice(unit.length);
    if (unit === '') return `no unit after "${whole}${fraction === undefined ? '' : `.${fraction}`}" (ns, us, ms, s, m or h)`;
    const scale = GO_UNITS[unit];
    if (scale === undefined) return `the unit "${unit}" (ns, us, ms, s, m or h)`;
    const value = BigInt(whole || '0');
    if (value > 2n ** 63n) return 'longer than Go\'s longest duration (about 292 years)';
    // the fraction as Go takes it: its digits while they fit, in the unit's nanoseconds (rounded down)
    const digits = (fraction ?? '').slice(0, 18);
    const part = digits === '' ? 0n : (BigInt(digits) * scale) / 10n ** BigInt(digits.length);
    total += value * scale + part;
    if (total > 2n ** 63n) return 'longer than Go\'s longest duration (about 292 years)';
  }
  if (!negative && total > MAX_DURATION_NS) return 'longer than Go\'s longest duration (about 292 years)';
  return negative ? -total : total;
}

const GO_DURATION = 'expected a duration such as "1m" or "15m" (Go syntax: ns, us, ms, s, m, h)';
const GO_DURATION_PATTERN = /^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$/;

/**
 * A Go duration as metav1.Duration parses it (`90s`, `15m`, `1h30m`; `0` switches the garbage collector off): only what
 * Go's time.ParseDuration takes (parseGoDuration), never negative.
 */
export const goDuration = () => z.string({ error: GO_DURATION })
  // the pattern (also the JSON Schema's): Go's syntax without a sign; then what Go refuses within it (a sum past int64)
  .regex(GO_DURATION_PATTERN, { error: GO_DURATION })
  .superRefine((text, ctx) => {
    if (!GO_DURATION_PATTERN.test(text)) return;
    const parsed = parseGoDuration(text);
    const why = typeof parsed === 'string' ? parsed : parsed < 0n ? 'a negative duration' : undefined;
    if (why !== undefined) ctx.addIssue({ code: 'custom', message: `${GO_DURATION}, got ${JSON.stringify(text)}: ${why}` });
  });


/** Milliseconds of each unit of a Prometheus duration, in the order the units must come. */
const PROMETHEUS_UNITS: readonly [string, bigint][] = [['y', 31_536_000_000n], ['w', 604_800_000n], ['d', 86_400_000n], ['h', 3_600_000n], ['m', 60_000n], ['s', 1000n], ['ms', 1n]];

/**
 * Prometheus' model.ParseDuration (what VictoriaMetrics and the Prometheus operator read `interval:` and `for:` with):
 * each unit at most once, from years down to milliseconds (`1h30m`, never `30m1h`), within time.Duration; undefined
 * when it parses, else why not.
 */
export function prometheusDurationProblem(text: string): string | undefined {
  if (text === '0') return undefined;
  let rest = text;
  let ms = 0n;
  let last = -1;
  while (rest !== '') {
    const m = /^([0-9]+)(ms|[ywdhms])/.exec(rest);
    if (!m) return 'not a duration';
    const at = PROMETHEUS_UNITS.findIndex(([u]) => u === m[2]);
    if (at <= last) return `the units come once each, from y down to ms (${PROMETHEUS_UNITS.map(([u]) => u).join(', ')})`;
    last = at;
    ms += BigInt(m[1]) * PROMETHEUS_UNITS[at][1];
    rest = rest.slice(m[0].length);
  }
  return ms * 1_000_000n > MAX_DURATION_NS ? 'longer than the longest duration (about 292 years)' : undefined;
}

const PROMETHEUS_DURATION_PATTERN = /^([0-9]+(ms|s|m|h|d|w|y))+$/;

/** A duration in Prometheus notation (`5m`, `1h30m`): what Prometheus' model.ParseDuration takes (prometheusDurationProblem). */
export const promDuration = () =>
  z.string({ error: 'expected a duration such as "5m"' }).regex(PROMETHEUS_DURATION_PATTERN, { error: 'expected a duration such as "5m" or "1h"' })
    .superRefine((text, ctx) => {
      const why = PROMETHEUS_DURATION_PATTERN.test(text) ? prometheusDurationProblem(text) : undefined;
      if (why !== undefined) ctx.addIssue({ code: 'custom', message: `expected a duration such as "5m" or "1h30m", got ${JSON.stringify(text)}: ${why}` });
    });

const DURATION_UNITS: Readonly<Record<string, number>> = { h: 3600, m: 60, s: 1 };

/** Whole seconds of a duration in hours, minutes and seconds (`10m`, `1h30m`, `45s`), as waitDuration accepts it. */
export function durationSeconds(value: string): number {
  let seconds = 0;
  for (const m of value.matchAll(/([0-9]+)([hms])/g)) seconds += Number(m[1]) * DURATION_UNITS[m[2]];
  return seconds;
}

/** A wait in hours, minutes and seconds (`10m`, `1h30m`), from `min` to `max` seconds. */
export const waitDuration = (min: number, max: number) =>
  z.string({ error: 'expected a duration such as "10m"' })
    .regex(/^([0-9]{1,6}[hms])+$/, { error: 'expected a duration in h, m and s, such as "10m" or "1h30m"' })
    .refine((v) => durationSeconds(v) >= min && durationSeconds(v) <= max, { error: `expected a duration from ${min}s to ${max / 3600}h` });
