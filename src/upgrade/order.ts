import { Crd } from './crd-diff';
import { CrResult, RenderedCr } from './revalidate';
import { ComponentName, ComponentOrder, Finding, ObjectRef, OrderStep } from './types';
import { apiGroup, describeObject, Manifest } from '../render/manifest';

/** An Application of the new render: its name and sync wave. */
export interface AppWave {
  readonly application: string;
  readonly wave: number;
}

/** Who applies the new CRDs: an Application (its wave), or nobody of this description (a pre-installed operator). */
export type CrdApplier = AppWave | undefined;

/** Objects by reference, for a control plane test that applies the order (planUpgrade returns them beside the plan). */
export class OrderObjects {
  readonly manifests = new Map<string, Manifest>();

  ref(side: 'old' | 'new' | 'prepare' | 'delete', m: Manifest, source: string): ObjectRef {
    const ns = m.metadata.namespace;
    const ref = `${side}:${apiGroup(m.apiVersion)}/${m.kind}/${ns ? `${ns}/` : ''}${m.metadata.name}`;
    this.manifests.set(ref, m);
    return { apiVersion: m.apiVersion, kind: m.kind, ...(ns ? { namespace: ns } : {}), name: m.metadata.name, source, ref };
  }
}

/** A sync before a pre-installed operator's upgrade (what it must find in place). */
export interface PrepareStep {
  readonly application: string;
  readonly wave: number;
  readonly what: string;
  readonly objects: readonly RenderedCr[];
}

export interface OrderInput {
  readonly component: ComponentName;
  readonly fromCrds: readonly Crd[];
  readonly toCrds: readonly Crd[];
  /** The CRs of the old end the old CRDs accept: the cluster before, with the old CRDs. */
  readonly fromCrs: readonly RenderedCr[];
  readonly toCrs: readonly RenderedCr[];
  /** The new CRs against the old CRDs (their invalid ones need the new CRDs first). */
  readonly underOld: readonly CrResult[];
  readonly crdApplier: CrdApplier;
  readonly waves: ReadonlyMap<string, number>;
  readonly objects: OrderObjects;
  readonly versions: { readonly from: string; readonly to: string };
  /**
   * A pre-installed operator whose CRs this description renders in the form of the release it runs (releases.<key>):
   * its owner upgrades it outside Argo CD (the new CRDs), and only then does the description go to the new release's
   * form. `prepare`: Application syncs before that upgrade; `upgrade`: the owner's command and what its Helm upgrade deletes.
   */
  readonly release?: {
    readonly key: string;
    readonly prepare?: readonly PrepareStep[];
    readonly upgrade?: { readonly what: string; readonly command: readonly string[]; readonly deletes: readonly RenderedCr[] };
  };
}

const byWave = (a: Omit<OrderStep, 'step'>, b: Omit<OrderStep, 'step'>) => (a.wave ?? -1) - (b.wave ?? -1) || (a.application ?? '').localeCompare(b.application ?? '');

/**
 * The order of a component's upgrade by Argo CD sync wave: the Application that applies the new CRDs (an install
 * renders CRDs before anything else of its sync), then each Application of new CRs in its wave. A step that sends a
 * CR of the new form (invalid under the old CRD) before its new CRD is in place is a blocker; the reverse order is
 * recorded as the rejected one.
 */
export function planOrder(input: OrderInput): { order: ComponentOrder; findings: Finding[] } {
  const { component, objects } = input;
  const newForm = input.underOld.filter((r) => r.outcome !== 'valid');
  const release = input.crdApplier === undefined ? input.release : undefined;
  const deletes = (release?.upgrade?.deletes ?? []).map((c) => objects.ref('delete', c.object, c.source));
  const crdStep: Omit<OrderStep, 'step'> = {
    wave: input.crdApplier?.wave ?? null,
    application: input.crdApplier?.application ?? null,
    what: `the ${input.versions.to} CRDs${input.crdApplier ? ` (applied first in ${input.crdApplier.application}'s sync)` : ` (outside Argo CD: the operator's own upgrade${release?.upgrade ? `: ${release.upgrade.what}` : ''})`}`,
    objects: input.toCrds.map((c) => objects.ref('new', c.object, `file ${c.file}`)),
    ...(release?.upgrade ? { command: release.upgrade.command } : {}),
    ...(deletes.length > 0 ? { deletes } : {}),
  };
  const prepareSteps: Omit<OrderStep, 'step'>[] = (release?.prepare ?? []).map((s) => ({
    wave: s.wave, application: s.application, what: s.what, objects: s.objects.map((c) => objects.ref('prepare', c.object, c.source)),
  }));
  const apps = new Map<string, RenderedCr[]>();
  for (const cr of input.toCrs) {
    const app = cr.application ?? '';
    apps.set(app, [...(apps.get(app) ?? []), cr]);
  }
  const crSteps: Omit<OrderStep, 'step'>[] = [...apps].map(([app, crs]) => ({
    wave: app === '' ? null : input.waves.get(app) ?? 0,
    application: app === '' ? null : app,
    what: `${crs.length} custom resource(s) of the ${input.versions.to} render`
      + (release && app !== '' ? ` (once the operator runs ${input.versions.to}: releases.${release.key} unset or ${input.versions.to}, synth, commit)` : ''),
    objects: crs.map((c) => objects.ref('new', c.object, c.source)),
  }));
  const findings: Finding[] = [];
  const crdFiles = [...new Set(input.toCrds.map((c) => c.file))];
  for (const s of crSteps) {
    const early = newForm.filter((r) => (r.cr.application ?? null) === s.application);
    if (early.length === 0) continue;
    // the same sync as the CRDs (an install's own CRs; or, outside Argo CD, a chart's own CRs with its CRDs): CRDs go first
    const sameSync = input.crdApplier === undefined ? s.application === null : s.application === input.crdApplier.application;
    const later = input.crdApplier !== undefined && s.wave !== null && s.wave > input.crdApplier.wave;
    // a description that follows the release the operator runs renders the new form only after the operator's upgrade
    if (sameSync || later || release) continue;
    const what = early.map((r) => describeObject(r.cr.object)).join(', ');
    findings.push({
      section: 'order',
      type: 'order-blocked',
      severity: 'blocker',
      component,
      subject: s.application ?? 'outside Argo CD',
      to: early.map((r) => describeObject(r.cr.object)),
      message: input.crdApplier === undefined
        ? `${s.application ?? 'a sync'} (wave ${s.wave ?? '-'}) would send ${what} in the ${input.versions.to} form while nothing of this description upgrades the CRDs (the operator is not installed by it): upgrade the operator to ${input.versions.to} first, then sync`
        : `${s.application} (wave ${s.wave}) would send ${what} in the ${input.versions.to} form no later than ${input.crdApplier.application} (wave ${input.crdApplier.wave}) applies the new CRDs: give it a later wave`,
      files: [...crdFiles, ...early.map((r) => r.cr.source)],
    });
  }
  // a pre-installed operator's upgrade comes between the syncs that prepare it and those of the new form, whatever their waves
  const outside = crSteps.filter((s) => s.application === null);
  const synced = crSteps.filter((s) => s.application !== null).sort(byWave);
  const steps = (release ? [...prepareSteps, crdStep, ...outside, ...synced]
    : [crdStep, ...crSteps].sort(byWave)).map((s, i) => ({ ...s, step: i + 1 }));
  for (const s of steps) {
    findings.push({
      section: 'order',
      type: 'order-step',
      severity: 'info',
      component,
      subject: `step ${s.step}`,
      to: s.objects.map((o) => `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`),
      message: `${s.wave === null ? 'outside Argo CD' : `wave ${s.wave}, ${s.application}`}: ${s.what}: ${s.objects.map((o) => `${o.kind} ${o.name}`).join(', ') || 'nothing'}`
        + (s.deletes ? `; it deletes ${s.deletes.map((o) => `${o.kind} ${o.name}`).join(', ')}` : ''),
      files: [...new Set(s.objects.map((o) => o.source.replace(/^(file|render) /, '')))],
    });
  }
  const before = [
    ...input.fromCrds.map((c) => objects.ref('old', c.object, `file ${c.file}`)),
    ...input.fromCrs.map((c) => objects.ref('old', c.object, c.source)),
  ];
  const rejected = newForm.length === 0 ? undefined : {
    steps: [...crSteps.filter((s) => newForm.some((r) => (r.cr.application ?? null) === s.application)), crdStep]
      .map((s, i) => ({ ...s, step: i + 1 })),
    why: newForm.map((r) => `${describeObject(r.cr.object)}: ${r.problems.join('; ')}`).join(' | '),
  };
  return { order: { component, before, steps, ...(rejected ? { rejected } : {}) }, findings };
}
