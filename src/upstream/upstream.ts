import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Footprint } from './footprint';
import { helmFootprint } from './helm';
import { ImageDefault, imageFieldsOfTemplate } from './images';
import { kustomizeFootprint, KustomizePatch } from './kustomize';
import { ApplicationSource, GPU_OPERATOR_CHART, NETWORK_OPERATOR_CHART, releaseOfSource, VendoredChart, VendoredRelease } from './releases';
import { filesDigest, listTree, moduleFolderDigest } from '../digests';
import { CompiledCache, defaultCacheDir } from '../validate/compiled-cache';

type Json = Record<string, unknown>;


function get(values: unknown, dotted: string): unknown {
  return dotted.split('.').reduce<unknown>((cur, k) => (typeof cur === 'object' && cur !== null ? (cur as Json)[k] : undefined), values);
}

/** The footprint of one Application source, with the release it was read from. */
export interface SourceFootprint {
  readonly release: VendoredRelease;
  /** Undefined when the release's templates are not vendored (only its values). */
  readonly footprint?: Footprint;
}

/** The defaults a NicClusterPolicy's spec.global is compared with. */
export interface NicGlobalDefault {
  readonly repository: string;
  readonly version: string;
  /** values.yaml paths they were read from. */
  readonly from: string;
}

/**
 * The vendored upstream installs (../shared/upstream-installs): chart values, Chart.yaml and the
 * footprint of each pinned chart/overlay. Everything is read lazily; derived results are cached in
 * memory per process and on disk (node_modules/.cache, keyed by the content of the release's
 * files and of the readers' code), so a render that checks against upstream stays cheap.
 */
export class Upstream {

  /** The upstream folder, or undefined when it does not exist (rules that need it then report nothing). */
  static open(root: string): Upstream | undefined {
    const abs = path.resolve(root);
    const known = Upstream.opened.get(abs);
    if (known) return known;
    if (!existsSync(abs) || !statSync(abs).isDirectory()) return undefined;
    const u = new Upstream(abs);
    Upstream.opened.set(abs, u);
    return u;
  }

  private static readonly opened = new Map<string, Upstream>();
  private readonly memo = new Map<string, unknown>();
  private readonly fingerprints = new Map<string, string>();
  private readonly cache: CompiledCache | undefined;

  private constructor(readonly root: string) {
    const dir = defaultCacheDir();
    this.cache = dir ? new CompiledCache(dir) : undefined;
  }

  /** Folder of a release, or undefined when it is not vendored here. */
  releaseDir(r: VendoredRelease): string | undefined {
    const dir = path.join(this.root, r.folder, r.type === 'helm' ? r.chartPath : r.path);
    return existsSync(dir) ? dir : undefined;
  }

  /**
   * Memoised in this process and cached on disk, keyed by the content of every file of the release
   * folder (symlinks followed) and of the code of this folder that derives the result.
   */
  private derived<T>(kind: string, r: VendoredRelease, input: unknown, compute: () => T): T {
    let fingerprint = this.fingerprints.get(r.folder);
    if (!fingerprint) {
      const folder = path.join(this.root, r.folder);
      fingerprint = filesDigest(folder, listTree(folder));
      this.fingerprints.set(r.folder, fingerprint);
    }
    const key = this.cache?.key(kind, [moduleFolderDigest(__filename), fingerprint, input]) ?? JSON.stringify([kind, fingerprint, input]);
    if (this.memo.has(key)) return this.memo.get(key) as T;
    let value = this.cache?.readJson<T>(key);
    if (value === undefined) {
      value = compute();
      this.cache?.writeJson(key, value);
    }
    this.memo.set(key, value);
    return value;
  }

  /** The chart's default values (values.yaml) and its published appVersion. */
  chartDefaults(r: VendoredChart): { values: Json; appVersion: string | undefined; version: string } | undefined {
    const dir = this.releaseDir(r);
    if (!dir) return undefined;
    return this.derived('chart-defaults', r, r.chartPath, () => {
      const meta = parseYaml(readFileSync(path.join(dir, 'Chart.yaml'), 'utf8')) as { version: string; appVersion?: string };
      const values = (parseYaml(readFileSync(path.join(dir, 'values.yaml'), 'utf8')) ?? {}) as Json;
      return { values, appVersion: r.published?.appVersion ?? meta.appVersion, version: r.published?.version ?? meta.version };
    });
  }

  /**
   * The GPU Operator chart's default for every ClusterPolicy image field its clusterpolicy.yaml
   * template fills from values.yaml, by CR path (`spec.validator`, `spec.driver.manager`, ...).
   */
  clusterPolicyImageDefaults(): Record<string, ImageDefault> | undefined {
    const r = GPU_OPERATOR_CHART;
    const dir = this.releaseDir(r);
    const defaults = this.chartDefaults(r);
    if (!dir || !defaults) return undefined;
    return this.derived('cluster-policy-images', r, r.chartPath, () => {
      const template = readFileSync(path.join(dir, 'templates', 'clusterpolicy.yaml'), 'utf8');
      const out: Record<string, ImageDefault> = {};
      for (const [crPath, f] of imageFieldsOfTemplate(template)) {
        const v = get(defaults.values, f.valuesPath) as Json | undefined;
        const str = (x: unknown): string | undefined => (typeof x === 'string' && x !== '' ? x : undefined);
        const version = str(v?.version) ?? (f.versionFromAppVersion ? defaults.appVersion : undefined);
        out[crPath] = {
          valuesPath: f.valuesPath,
          versionFromAppVersion: str(v?.version) === undefined && f.versionFromAppVersion,
          ...(str(v?.repository) ? { repository: str(v?.repository) } : {}),
          ...(str(v?.image) ? { image: str(v?.image) } : {}),
          ...(version ? { version } : {}),
        };
      }
      return out;
    });
  }

  /**
   * The Network Operator release's own component registry and tag. The v26.4.1 values.yaml lists no
   * NicClusterPolicy component images (the chart renders no NicClusterPolicy since v24.10); the
   * coordinates it does hold for the release's Mellanox component images are those of the OFED
   * driver's init container, which spec.global (the default of every component) must equal.
   */
  nicClusterPolicyGlobalDefault(): NicGlobalDefault | undefined {
    const defaults = this.chartDefaults(NETWORK_OPERATOR_CHART);
    if (!defaults) return undefined;
    const from = 'operator.ofedDriver.initContainer';
    const init = get(defaults.values, from) as Json | undefined;
    if (typeof init?.repository !== 'string' || typeof init.version !== 'string') return undefined;
    return { repository: init.repository, version: init.version, from: `${from}.{repository,version}` };
  }

  /**
   * What an Argo CD Application source installs, read from the vendored release with the source's
   * values or patches; undefined when no vendored release matches it.
   */
  sourceFootprint(source: ApplicationSource, destinationNamespace: string, applicationName: string): SourceFootprint | undefined {
    const release = releaseOfSource(source);
    if (!release) return undefined;
    const dir = this.releaseDir(release);
    if (!dir) return undefined;
    if (release.type === 'helm') {
      if (!release.templatesVendored) return { release };
      const input = {
        releaseName: source.helm?.releaseName ?? applicationName,
        namespace: destinationNamespace,
        values: source.helm?.valuesObject ?? {},
        published: release.published,
        crdsNotVendored: release.crdsNotVendored,
      };
      return { release, footprint: this.derived('helm-footprint', release, input, () => helmFootprint(dir, input)) };
    }
    const input = {
      namespace: destinationNamespace,
      patches: (source.kustomize?.patches ?? []) as readonly KustomizePatch[],
      kustomizeNamespace: source.kustomize?.namespace,
    };
    return { release, footprint: this.derived('kustomize-footprint', release, input, () => kustomizeFootprint(dir, this.root, input)) };
  }
}
