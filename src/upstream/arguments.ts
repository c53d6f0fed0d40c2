import { printable } from '../errors';
import { DNS_SUBDOMAIN, isDnsLabel } from '../model/k8s-syntax';

/**
 * What an Application of a tree gives the engines, checked against its syntax before it reaches a command
 * line: a tree may come from a pull request, and nothing of it may become a flag (`--output-dir=...` as a
 * release name) or a path (`1.0.0/../..` as a chart version). Every check returns why the value is refused,
 * or undefined. The values are then passed as values of their flags (`--namespace=<ns>`) or after `--`.
 */

/** Helm's release name rule (helm/pkg/chartutil ValidateReleaseName): a DNS-1123 subdomain of at most 53 characters. */
export const RELEASE_NAME_MAX = 53;

/** SemVer 2.0.0 (semver.org's regular expression), with the optional `v` that Helm chart versions may carry. */
const SEMVER = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** A Kubernetes version as `--kube-version` takes it: `v1.31.0`, `1.31`. */
const KUBE_VERSION = /^v?\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:[-+][0-9A-Za-z.-]{1,64})?$/;

/** An API version as `--api-versions` takes it: `group/version`, `version`, or `group/version/Kind`. */
const API_VERSION = /^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?(?:\/[A-Za-z][A-Za-z0-9]*)?$/;

/** A chart name (Helm: letters, digits, `-`, `_` and `.`), never a path. */
const CHART_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,249}$/;

/** A git tag or a repository name as a folder name of the upstream installs (`mpi-operator-v0.8.2`). */
const FOLDER_PART = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;

const quoted = (v: string) => `"${printable(v.length > 80 ? `${v.slice(0, 80)}...` : v)}"`;

export function releaseNameProblem(name: string): string | undefined {
  if (name.length <= RELEASE_NAME_MAX && DNS_SUBDOMAIN.test(name)) return undefined;
  return `helm.releaseName ${quoted(name)} is not a Helm release name (lower-case letters, digits, "-" and ".", at most ${RELEASE_NAME_MAX} characters)`;
}

export function namespaceProblem(namespace: string, field: string): string | undefined {
  if (namespace === '' || isDnsLabel(namespace)) return undefined;
  return `${field} ${quoted(namespace)} is not a namespace name (a DNS-1123 label: lower-case letters, digits and "-", at most 63 characters)`;
}

export function chartVersionProblem(version: string): string | undefined {
  if (SEMVER.test(version)) return undefined;
  return `targetRevision ${quoted(version)} is not a chart version (SemVer, such as 1.2.3 or v26.7.0): pin the exact version of a released chart`;
}

export function chartNameProblem(chart: string): string | undefined {
  if (CHART_NAME.test(chart) && !chart.includes('..')) return undefined;
  return `chart ${quoted(chart)} is not a chart name (letters, digits, "-", "_" and ".")`;
}

export function kubeVersionProblem(version: string): string | undefined {
  if (KUBE_VERSION.test(version)) return undefined;
  return `helm.kubeVersion ${quoted(version)} is not a Kubernetes version (such as v1.31.0)`;
}

export function apiVersionProblem(apiVersion: string): string | undefined {
  if (apiVersion.length <= 317 && API_VERSION.test(apiVersion)) return undefined;
  return `helm.apiVersions entry ${quoted(apiVersion)} is not an API version (group/version, such as monitoring.coreos.com/v1)`;
}

/** A repository name or a tag, as one folder name of the upstream installs (`<repo>-<tag>`). */
export function folderPartProblem(value: string, field: string): string | undefined {
  if (FOLDER_PART.test(value) && !value.includes('..')) return undefined;
  return `${field} ${quoted(value)} is not a repository name or tag (letters, digits, ".", "_", "+" and "-")`;
}

/** A path of an Application (an overlay's, a patch's, a values file's): relative, within its folder, no `..`. */
export function relativePathProblem(p: string, field: string): string | undefined {
  const parts = p.replace(/^\.\//, '').split('/');
  if (p.length <= 1024 && !p.startsWith('/') && !p.includes('\0') && !parts.includes('..')) return undefined;
  return `${field} ${quoted(p)} is not a relative path inside its folder`;
}

/** `--set` names: a dotted path of keys, never a flag. */
export function parameterNameProblem(name: string): string | undefined {
  if (name !== '' && !name.startsWith('-') && name.length <= 1024 && !/[\0\n]/.test(name)) return undefined;
  return `helm.parameters name ${quoted(name)} is not a value path`;
}

/** The first problem of a list of checks. */
export function firstProblem(...problems: readonly (string | undefined)[]): string | undefined {
  return problems.find((p) => p !== undefined);
}
