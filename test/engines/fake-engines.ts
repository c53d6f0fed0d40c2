import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from '../helpers';

/*
 * Fake engines for the hostile-engine suites: small shell scripts named helm and kubectl in a folder
 * that a test puts on the engines' search path (resolveEngines({ searchPath })), or on PATH for a CLI
 * child. Each answers its version probe as a recent engine does, and does what the test says for the
 * rest (`template` for helm, `kustomize` for kubectl). An engine the folder lacks comes from the npm
 * package (the real one), unpacked into the project's shared cache.
 */

/** The project's shared cache folder: the packaged engines are unpacked there once for every test. */
export const ENGINE_CACHE = path.join(ROOT, 'node_modules', '.cache', 'gpu-cluster-manifests');

/** What a fake helm answers `version --template {{.Version}}` with (a printf format: `\033` is ESC). */
export const FAKE_HELM_VERSION = 'v4.1.4';
/** What a fake kubectl answers `version --client -o json` with. */
export const FAKE_KUBECTL_VERSION = '{"clientVersion": {"gitVersion": "v1.33.9"}, "kustomizeVersion": "v5.6.0"}';

export interface FakeEngines {
  /** The shell body run for `helm template ...` (its arguments are "$@", `template` shifted off). */
  readonly helm?: string;
  /** The shell body run for `kubectl kustomize ...` (its arguments are "$@", `kustomize` shifted off). */
  readonly kubectl?: string;
  /** The answer to `helm version` (default FAKE_HELM_VERSION). */
  readonly helmVersion?: string;
}

/** A folder `<root>/<name>` holding the fake engines; returns it. */
export function fakeEngines(root: string, name: string, engines: FakeEngines): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  const script = (file: string, probe: string, verb: string, body: string) => {
    writeFileSync(path.join(dir, file), `#!/bin/sh\ncase "$1" in\n  version) ${probe};;\n  ${verb}) shift\n${body}\n;;\n  *) echo "unexpected: $*" >&2; exit 64;;\nesac\n`);
    chmodSync(path.join(dir, file), 0o755);
  };
  if (engines.helm !== undefined) script('helm', `printf '${engines.helmVersion ?? FAKE_HELM_VERSION}'`, 'template', engines.helm);
  if (engines.kubectl !== undefined) script('kubectl', `echo '${FAKE_KUBECTL_VERSION}'`, 'kustomize', engines.kubectl);
  return dir;
}

/** A shell loop that prints `count` ConfigMaps (one document each). */
export function configMaps(count: number | string): string {
  return `i=0; while [ $i -lt ${count} ]; do printf -- '---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: c%s\\n' $i; i=$((i+1)); done`;
}

/** True when the process is gone (or a zombie nobody reaped: it runs nothing any more). Linux: /proc. */
export function processGone(pid: number): boolean {
  try {
    return /^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
