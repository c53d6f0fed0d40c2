/**
 * Names that upstream charts derive from the Helm release, computed the way their templates do, so
 * that what we bind or trust (a ServiceAccount) matches what the chart creates.
 */

/** Overrides a chart's values may set on its own name. */
export interface HelmNameOverrides {
  readonly nameOverride?: string;
  readonly fullnameOverride?: string;
}

/**
 * The conventional `<chart>.fullname` helper of `helm create` (Kueue's `kueue.fullname`,
 * victoria-metrics-common's `vm.fullname`): the override if set, else the release name when it
 * already contains the chart name, else `<release>-<chart>`; cut to 63 characters without a trailing dash.
 */
export function helmFullname(release: string, chart: string, values: HelmNameOverrides = {}): string {
  const truncate = (s: string) => s.slice(0, 63).replace(/-+$/, '');
  if (values.fullnameOverride) return truncate(values.fullnameOverride);
  const name = values.nameOverride || chart;
  return truncate(release.includes(name) ? release : `${release}-${name}`);
}

/** The user name the API server gives a ServiceAccount's requests (`request.userInfo.username`). */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}
