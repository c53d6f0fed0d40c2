import { z } from 'zod';
import { DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY, LABEL_VALUE } from './k8s-syntax';
import { parseQuantity } from './quantity';

/**
 * Reusable field types of the cluster description. Each carries the message a user sees after
 * the field path (`nodes.gpuWorkers.gpusPerNode: expected a positive integer, got "eight"`).
 */


export const positiveInt = (what = 'a positive integer') =>
  z.int({ error: `expected ${what}` }).positive({ error: `expected ${what}` });

export const nonNegativeInt = (what = 'a non-negative integer') =>
  z.int({ error: `expected ${what}` }).nonnegative({ error: `expected ${what}` });

export const intRange = (min: number, max: number) =>
  z.int({ error: `expected an integer from ${min} to ${max}` })
    .min(min, { error: `expected an integer from ${min} to ${max}` })
    .max(max, { error: `expected an integer from ${min} to ${max}` });

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

/** An absolute filesystem path on the nodes. */
export const absolutePath = () =>
  z.string({ error: 'expected an absolute path' }).regex(/^\/[^\0]*$/, { error: 'expected an absolute path (starting with "/")' });

/** A Kubernetes quantity, as a string (`"192"`, `1800Gi`) or a plain number. */
export const quantity = (what: 'cpu' | 'memory') =>
  z.union([z.string(), z.number()], { error: `expected a ${what} quantity such as ${what === 'cpu' ? '"192" or "500m"' : '"1800Gi"'}` })
    .transform((v) => String(v))
    .refine((v) => {
      try {
        return parseQuantity(v) > 0;
      } catch {
        return false;
      }
    }, { error: `expected a positive ${what} quantity such as ${what === 'cpu' ? '"192" or "500m"' : '"1800Gi"'}` });

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

/** A duration in Prometheus notation (`5m`, `1h30m`). */
export const promDuration = () =>
  z.string({ error: 'expected a duration such as "5m"' }).regex(/^([0-9]+(ms|s|m|h|d|w|y))+$/, { error: 'expected a duration such as "5m" or "1h"' });
