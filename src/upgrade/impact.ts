import { OperandTable } from './components';
import { ComponentName, Finding } from './types';
import { isJsonObject, valueAt } from '../json';
import { Manifest } from '../render/manifest';
import { imageObjects } from '../upstream/images';

type Json = Record<string, unknown>;

/** An operator CR at one end of the upgrade, with its CRD's defaults applied, and where it comes from. */
export interface OperatorCr {
  readonly object: Manifest;
  readonly source: string;
  readonly files: readonly string[];
}

/** `repository/image:version` of an image object, spec.global filling in what it leaves out. */
function imageOf(value: { repository?: string; image?: string; version?: string }, global: Json | undefined): string | undefined {
  const repository = value.repository ?? (typeof global?.repository === 'string' ? global.repository : undefined);
  const version = value.version ?? (typeof global?.version === 'string' ? global.version : undefined);
  if (value.image === undefined) return undefined;
  return `${repository ? `${repository.replace(/\/+$/, '')}/` : ''}${value.image}${version ? `:${version}` : ''}`;
}

/** Operand -> image of an operator CR's spec (the image objects of its spec; spec.global fills in). */
function operandImages(cr: Manifest, table: OperandTable): Map<string, string> {
  const spec = isJsonObject(cr.spec) ? cr.spec : {};
  const global = table.globalImage && isJsonObject(spec[table.globalImage]) ? spec[table.globalImage] as Json : undefined;
  const out = new Map<string, string>();
  for (const { path, value } of imageObjects(spec, '')) {
    if (path === table.globalImage) continue;
    const image = imageOf(value, global);
    if (image !== undefined) out.set(path, image);
  }
  return out;
}

/** Whether an operand runs: its top-level section's `enabled` (ClusterPolicy), or its presence (NicClusterPolicy). */
function operandEnabled(cr: Manifest, operand: string, table: OperandTable): boolean {
  const top = operand.split('.')[0];
  const section = valueAt(cr.spec, top);
  if (!isJsonObject(section)) return false;
  return table.enabledBy === 'presence' ? true : section.enabled !== false;
}

/**
 * What each operand image change does on the GPU nodes: the operator CR at both ends (its CRD's defaults applied),
 * operand by operand: a kernel module reload (drain), a device-plugin restart, a DaemonSet roll, or nothing (the
 * operand is not run). A kernel module reload names the upgrade policy the CR actually has.
 */
export function operandImpact(component: ComponentName, table: OperandTable, from: OperatorCr, to: OperatorCr): Finding[] {
  const out: Finding[] = [];
  const a = operandImages(from.object, table);
  const b = operandImages(to.object, table);
  const files = [...new Set([...from.files, ...to.files])];
  const subject = `${table.kind} ${to.object.metadata.name}`;
  let reload = false;
  for (const operand of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(operand);
    const y = b.get(operand);
    if (x === y) continue;
    const impact = table.impacts[operand] ?? 'daemonset-roll';
    const on = operandEnabled(to.object, operand, table);
    const wasOn = operandEnabled(from.object, operand, table);
    const change = `${operand} ${x ?? 'none'} -> ${y ?? 'none'}`;
    if (y === undefined) {
      // the new CR does not configure it: what the operator then runs is its own default, not a render to compare
      out.push({ section: 'gpu-node-impact', type: 'no-node-impact', severity: 'info', component, subject, path: `spec.${operand}`, from: x, message: `${change}: not configured by the new ${table.kind} (${to.source}): not compared`, files });
      continue;
    }
    if (!on && !wasOn) {
      out.push({ section: 'gpu-node-impact', type: 'no-node-impact', severity: 'info', component, subject, path: `spec.${operand}`, from: x, to: y, message: `${change}: not run by the operator (spec.${operand.split('.')[0]} disabled): none`, files });
      continue;
    }
    if (impact === 'kernel-module-reload') reload = true;
    out.push({
      section: 'gpu-node-impact',
      type: impact,
      severity: impact === 'kernel-module-reload' ? 'warning' : 'info',
      component,
      subject,
      path: `spec.${operand}`,
      from: x,
      to: y,
      message: `${change}: ${!wasOn ? 'newly enabled: ' : !on ? 'disabled: its pods go: ' : ''}${table.why[impact]}`,
      files,
    });
  }
  if (reload && table.upgradePolicy) {
    const policy = valueAt(to.object.spec, table.upgradePolicy.path);
    const p = isJsonObject(policy) ? policy : undefined;
    const auto = p?.autoUpgrade === true;
    const drain = isJsonObject(p?.drain) ? p!.drain as Json : undefined;
    out.push({
      section: 'gpu-node-impact',
      type: 'upgrade-policy',
      severity: auto ? 'info' : 'warning',
      component,
      subject,
      path: `spec.${table.upgradePolicy.path}`,
      to: policy,
      message: p === undefined
        ? `spec.${table.upgradePolicy.path} is not set: nothing coordinates the reloads: cordon and drain each GPU node before its ${table.upgradePolicy.operand} pod restarts`
        : `spec.${table.upgradePolicy.path} as rendered: ${JSON.stringify(policy)}: ${auto
          ? `the operator's upgrade controller reloads node by node (maxParallelUpgrades ${JSON.stringify(p.maxParallelUpgrades ?? 'default')}, maxUnavailable ${JSON.stringify(p.maxUnavailable ?? 'default')}), draining first${drain?.enable === true ? '' : ' only its own pods (drain.enable is not true: other GPU pods are evicted by the pod deletion)'}`
          : 'autoUpgrade is off: each node reloads when its pod restarts: cordon and drain each GPU node first'}`,
      files,
    });
  }
  return out;
}

/** A workload's pod template, images and whether it changed between two renders. */
function images(m: Manifest): string[] {
  const spec = valueAt(m, 'spec.template.spec') as { containers?: { image?: string }[]; initContainers?: { image?: string }[] } | undefined;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].map((c) => String(c.image ?? '')).filter((i) => i !== '');
}

const key = (m: Manifest): string => `${m.kind}/${m.metadata.namespace ?? ''}/${m.metadata.name}`;
const template = (m: Manifest): string => JSON.stringify(valueAt(m, 'spec.template') ?? null);

/** The DaemonSets of a chart's render at both ends that roll: a pod template that changed, or a new DaemonSet. */
export function daemonSetRolls(component: ComponentName, from: readonly Manifest[], to: readonly Manifest[], files: readonly string[]): Finding[] {
  const old = new Map(from.filter((m) => m.kind === 'DaemonSet').map((m) => [key(m), m]));
  const out: Finding[] = [];
  for (const d of to.filter((m) => m.kind === 'DaemonSet').sort((x, y) => (key(x) < key(y) ? -1 : 1))) {
    const before = old.get(key(d));
    if (before && template(before) === template(d)) continue;
    const change = before ? `${images(before).join(', ')} -> ${images(d).join(', ')}` : `new (${images(d).join(', ')})`;
    out.push({
      section: 'gpu-node-impact',
      type: 'daemonset-roll',
      severity: 'info',
      component,
      subject: `DaemonSet ${d.metadata.namespace ?? ''}/${d.metadata.name}`,
      from: before ? images(before) : undefined,
      to: images(d),
      message: `${change}: its pods roll on every node it runs on (its update strategy: ${JSON.stringify(valueAt(d, 'spec.updateStrategy') ?? 'RollingUpdate')})`,
      files,
    });
  }
  return out;
}

interface Webhook {
  readonly configuration: string;
  readonly configKind: string;
  readonly name: string;
  readonly failurePolicy: string;
  readonly service?: { readonly namespace?: string; readonly name?: string };
  readonly rules: readonly string[];
}

function webhooksOf(objects: readonly Manifest[]): Webhook[] {
  return objects.filter((m) => m.kind === 'ValidatingWebhookConfiguration' || m.kind === 'MutatingWebhookConfiguration').flatMap((m) => {
    const hooks = Array.isArray(m.webhooks) ? m.webhooks.filter(isJsonObject) : [];
    return hooks.map((w) => ({
      configuration: m.metadata.name,
      configKind: m.kind,
      name: String(w.name),
      // the API server's default is Fail
      failurePolicy: typeof w.failurePolicy === 'string' ? w.failurePolicy : 'Fail',
      service: isJsonObject(w.clientConfig) && isJsonObject(w.clientConfig.service) ? w.clientConfig.service as Webhook['service'] : undefined,
      rules: (Array.isArray(w.rules) ? w.rules.filter(isJsonObject) : []).flatMap((r) => (Array.isArray(r.resources) ? r.resources.map(String) : [])),
    }));
  });
}

/** The Deployment whose pods serve a Service of a render (the Service's selector within the pod template's labels). */
function backingDeployment(objects: readonly Manifest[], service: Webhook['service'], namespace: string): Manifest | undefined {
  const svc = objects.find((m) => m.kind === 'Service' && m.metadata.name === service?.name && (m.metadata.namespace ?? namespace) === (service?.namespace ?? namespace));
  const selector = valueAt(svc, 'spec.selector') as Record<string, string> | undefined;
  if (!selector || Object.keys(selector).length === 0) return undefined;
  return objects.find((m) => m.kind === 'Deployment' && (m.metadata.namespace ?? namespace) === (svc!.metadata.namespace ?? namespace)
    && Object.entries(selector).every(([k, v]) => (valueAt(m, 'spec.template.metadata.labels') as Record<string, string> | undefined)?.[k] === v));
}

/** A chart's render at one end: its objects, the namespace its objects default to, and webhooks only other values render. */
export interface ChartSide {
  readonly objects: readonly Manifest[];
  readonly namespace: string;
  /** Webhooks the chart renders only with values this render leaves off, by the values that switch them on. */
  readonly behindValues: readonly { readonly values: readonly string[]; readonly objects: readonly Manifest[] }[];
  readonly files: readonly string[];
}

/**
 * The control plane during the upgrade: the webhooks whose serving pods roll (a new pod template) with their
 * failurePolicy: while no new pod is ready, a `Fail` webhook refuses every request it intercepts (a `Ignore` one lets
 * it through unchecked); new and removed webhooks; webhooks the new release adds behind values this render leaves off.
 */
export function webhookImpact(component: ComponentName, from: ChartSide, to: ChartSide): Finding[] {
  const out: Finding[] = [];
  const files = [...new Set([...from.files, ...to.files])];
  const before = webhooksOf(from.objects);
  const after = webhooksOf(to.objects);
  const id = (w: Webhook) => `${w.configKind}/${w.configuration}/${w.name}`;
  const groups = new Map<string, { deployment: Manifest; hooks: Webhook[] }>();
  for (const w of after) {
    const d = backingDeployment(to.objects, w.service, to.namespace);
    if (!d) continue;
    const g = groups.get(key(d)) ?? { deployment: d, hooks: [] };
    g.hooks.push(w);
    groups.set(key(d), g);
  }
  for (const [k, { deployment, hooks }] of [...groups].sort(([x], [y]) => (x < y ? -1 : 1))) {
    const old = from.objects.find((m) => key(m) === k);
    if (old && template(old) === template(deployment)) continue;
    const failing = hooks.filter((h) => h.failurePolicy === 'Fail');
    const replicas = valueAt(deployment, 'spec.replicas') ?? 1;
    const resources = [...new Set(failing.flatMap((h) => h.rules))].sort();
    out.push({
      section: 'control-plane-impact',
      type: 'webhook-window',
      severity: failing.length > 0 ? 'warning' : 'info',
      component,
      subject: `Deployment ${deployment.metadata.namespace ?? to.namespace}/${deployment.metadata.name}`,
      from: old ? images(old) : undefined,
      to: images(deployment),
      message: `${old ? `${images(old).join(', ')} -> ${images(deployment).join(', ')}` : 'new'}: its ${JSON.stringify(replicas)} replica(s) roll, and it serves ${hooks.length} webhook(s); `
        + (failing.length > 0
          ? `until a new pod is ready, the ${failing.length} with failurePolicy Fail (${failing.map((h) => h.name).sort().join(', ')}) refuse every request they intercept: creating or updating ${resources.join(', ')} fails in that window`
          : 'all with failurePolicy Ignore: requests pass unchecked in that window'),
      files,
    });
  }
  const oldIds = new Map(before.map((w) => [id(w), w]));
  const newIds = new Map(after.map((w) => [id(w), w]));
  for (const [i, w] of [...newIds].sort(([x], [y]) => (x < y ? -1 : 1))) {
    const o = oldIds.get(i);
    if (!o) {
      out.push({ section: 'control-plane-impact', type: 'webhook-added', severity: w.failurePolicy === 'Fail' ? 'warning' : 'info', component, subject: `${w.configKind} ${w.configuration}`, path: w.name, to: w.failurePolicy, message: `new webhook ${w.name} (failurePolicy ${w.failurePolicy}) on ${w.rules.join(', ')}`, files });
    } else if (o.failurePolicy !== w.failurePolicy) {
      out.push({ section: 'control-plane-impact', type: 'failure-policy-changed', severity: w.failurePolicy === 'Fail' ? 'warning' : 'info', component, subject: `${w.configKind} ${w.configuration}`, path: w.name, from: o.failurePolicy, to: w.failurePolicy, message: `${w.name}: failurePolicy ${o.failurePolicy} -> ${w.failurePolicy}`, files });
    }
  }
  for (const [i, w] of [...oldIds].sort(([x], [y]) => (x < y ? -1 : 1))) {
    if (!newIds.has(i)) out.push({ section: 'control-plane-impact', type: 'webhook-removed', severity: 'info', component, subject: `${w.configKind} ${w.configuration}`, path: w.name, from: w.failurePolicy, message: `webhook ${w.name} removed`, files });
  }
  // what the chart brings behind values this render leaves off: new webhooks there are a change of the release too
  const hidden = (side: ChartSide) => side.behindValues.flatMap((b) => webhooksOf(b.objects).map((w) => ({ w, values: b.values })));
  const oldHidden = new Set(hidden(from).map(({ w }) => id(w)));
  for (const { w, values } of hidden(to).sort((x, y) => (id(x.w) < id(y.w) ? -1 : 1))) {
    if (oldHidden.has(id(w)) || oldIds.has(id(w)) || newIds.has(id(w))) continue;
    out.push({
      section: 'control-plane-impact',
      type: 'webhook-added',
      severity: 'info',
      component,
      subject: `${w.configKind} ${w.configuration}`,
      path: w.name,
      to: w.failurePolicy,
      message: `new webhook ${w.name} (failurePolicy ${w.failurePolicy}) on ${w.rules.join(', ')}, rendered only with ${values.map((v) => `${v}: true`).join(', ')} (off in this render)`,
      files,
    });
  }
  return out;
}
