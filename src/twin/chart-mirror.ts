import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { vendoredCrds } from './argocd-sync';
import { crdSourcesOf, sourcedCrdFile, unavailableCrd } from './chart-crds';
import { locateChart, renderableChart } from '../upstream/chart';
import { VendoredChart } from '../upstream/releases';

/**
 * Loopback mirrors of the Helm charts the managed installs pin, made from the vendored copies
 * (../shared/upstream-installs): Helm repositories over HTTP (`<url>/<repository>/index.yaml` and the chart archives)
 * and an OCI registry (the distribution API's read side: `/v2/<name>/manifests|blobs|tags`) for the charts Argo CD
 * reads as OCI artifacts: what a description's `mirrors.charts` is to point at in the twin of a cluster with managed
 * installs (twin-cluster.ts does not start it yet: the training cluster's twin is issue 48's next step); nothing reaches
 * out. chart-mirror.test.ts proves the twin's helm pulls from both.
 *
 * A chart is packaged as the release published it: the vendored folder, stamped and with its unvendored dependencies
 * removed as the toolkit renders it (src/upstream/chart.ts renderableChart), and its `crds/` filled from ../shared/crds
 * for the CRDs the vendored copy left out (releases.ts `unrenderedCrds` from `crds-not-vendored`), else from a file
 * of a Go module pinned for them (chart-crds.ts: Node Feature Discovery's, the NetworkAttachmentDefinition's, the
 * ComputeDomainClique's); one with neither is an error unless chart-crds.ts declares it unavailable with the reason.
 * Then `helm package` (the twin's helm) and `helm repo index`.
 *
 * Imports no test framework.
 */

/** The OCI media types of a Helm chart artifact (helm's pkg/registry). */
const HELM_CONFIG = 'application/vnd.cncf.helm.config.v1+json';
const HELM_LAYER = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

const digestOf = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** A chart archive (.tgz) of a vendored release, as published: see the file comment. */
export function packageChart(
  release: VendoredChart, opts: { upstream: string; schemas: string; helm: string; work: string; crdFiles: Readonly<Record<string, string>> },
): string {
  const located = locateChart(opts.upstream, release.chart, release.version);
  if (!located) throw new Error(`no vendored chart ${release.chart} ${release.version} in ${opts.upstream}`);
  const prepared = renderableChart(located, path.join(opts.work, 'cache'));
  const staged = path.join(opts.work, 'staged', release.chart);
  rmSync(staged, { recursive: true, force: true });
  cpSync(prepared.dir, staged, { recursive: true, dereference: true });
  fillCrds(release, staged, vendoredCrds(opts.schemas), opts.crdFiles);
  const out = path.join(opts.work, 'packages');
  mkdirSync(out, { recursive: true });
  const r = spawnSync(opts.helm, ['package', staged, '--destination', out], { encoding: 'utf8', timeout: 120_000, env: { PATH: process.env.PATH, HOME: opts.work } });
  if (r.status !== 0) throw new Error(`helm package ${release.chart} ${release.version}: ${(r.stderr || r.error?.message || '').trim()}`);
  const tgz = path.join(out, `${release.chart}-${release.version}.tgz`);
  if (!existsSync(tgz)) throw new Error(`helm package wrote no ${path.basename(tgz)} (${r.stdout.trim()})`);
  return tgz;
}

/**
 * Writes into the staged chart's `crds/` folders the CRDs the published chart carries there and the vendored copy left
 * out: each from ../shared/crds, else from its pinned source (chart-crds.ts, the whole file as the chart carries it),
 * else declared unavailable there; any other is an error naming the chart, its version, the chart path and the CRD.
 */
function fillCrds(release: VendoredChart, staged: string, crds: ReturnType<typeof vendoredCrds>, crdFiles: Readonly<Record<string, string>>): void {
  for (const group of release.unrenderedCrds.filter((g) => g.from === 'crds-not-vendored')) {
    const into = path.join(staged, group.chartPath, 'crds');
    const sourced = crdSourcesOf(release, group.chartPath).map((source) => {
      const file = crdsInFile(sourcedCrdFile(source, crdFiles));
      const held = [...file.kinds].sort();
      if (held.join(' ') !== [...source.crds].sort().join(' ')) {
        throw new Error(`${source.module}@${source.version} ${source.file}: holds the CRDs ${held.join(', ') || 'none'}, pinned ${source.crds.join(', ')} (src/twin/chart-crds.ts)`);
      }
      return { source, text: file.text };
    });
    for (const ref of group.crds) {
      const name = `${ref.group}/${ref.kind}`;
      const candidates = crds.get(name);
      if (candidates) {
        mkdirSync(into, { recursive: true });
        const pick = candidates.find((c) => path.basename(c.file).includes(release.version)) ?? candidates.find((c) => !/\d+\.\d+\.\d+/.test(path.basename(c.file))) ?? candidates[0];
        writeFileSync(path.join(into, `${ref.group}_${ref.kind.toLowerCase()}.yaml`), stringify(pick.crd));
        continue;
      }
      const from = sourced.find((s) => s.source.crds.includes(name));
      if (from) {
        mkdirSync(into, { recursive: true });
        writeFileSync(path.join(into, path.basename(from.source.file)), from.text);
        continue;
      }
      if (unavailableCrd(release, group.chartPath, name) !== undefined) continue;
      const looked = sourced.map((s) => `${s.source.module}@${s.source.version} ${s.source.file}`);
      throw new Error(`${release.chart} ${release.version} ${group.chartPath || '.'}: the published chart carries CRD ${name} in crds/, and the twin has no copy of it (../shared/crds) and no pinned source (src/twin/chart-crds.ts${looked.length > 0 ? `: not in ${looked.join(', ')}` : ''})`);
    }
  }
}

/** The CRDs of a YAML file (`group/Kind`) and its text. */
function crdsInFile(text: string): { text: string; kinds: Set<string> } {
  const kinds = new Set<string>();
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJS({ maxAliasCount: 100 }) as { kind?: string; spec?: { group?: string; names?: { kind?: string } } } | null;
    if (o?.kind === 'CustomResourceDefinition') kinds.add(`${o.spec?.group}/${o.spec?.names?.kind}`);
  }
  return { text, kinds };
}

/** An OCI artifact the registry serves: its manifest and blobs by digest. */
interface Artifact {
  readonly manifest: Buffer;
  readonly blobs: Map<string, Buffer>;
}

/** The Helm repositories and OCI registry on loopback (startChartMirror). */
export class ChartMirror {
  /** OCI repositories (`kueue/charts/kueue`) -> tag -> artifact. */
  private readonly oci = new Map<string, Map<string, Artifact>>();
  /** Every request answered: method, path, status. */
  readonly requests: { method: string; path: string; status: number }[] = [];

  /** @internal */
  constructor(readonly root: string, private readonly server: http.Server, readonly port: number) {}

  /** The HTTP URL of a Helm repository (`nvidia` -> http://127.0.0.1:<port>/helm/nvidia). */
  helmUrl(repository: string): string {
    return `http://127.0.0.1:${this.port}/helm/${repository}`;
  }

  /** The oci:// URL of a repository prefix of the registry (`kueue/charts` -> oci://127.0.0.1:<port>/kueue/charts). */
  ociUrl(prefix: string): string {
    return `oci://127.0.0.1:${this.port}/${prefix}`;
  }

  /** Adds chart archives to a Helm repository and writes its index (the twin's `helm repo index`). */
  addToHelmRepository(repository: string, archives: readonly string[], helm: string): void {
    const dir = path.join(this.root, 'helm', repository);
    mkdirSync(dir, { recursive: true });
    for (const a of archives) cpSync(a, path.join(dir, path.basename(a)));
    const r = spawnSync(helm, ['repo', 'index', dir, '--url', this.helmUrl(repository)], { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: this.root } });
    if (r.status !== 0) throw new Error(`helm repo index ${dir}: ${(r.stderr || r.error?.message || '').trim()}`);
  }

  /** Adds a chart archive to the registry as helm pushes it: `<repository>:<tag>` (repository `kueue/charts/kueue`). */
  addToRegistry(repository: string, archive: string): void {
    const layer = readFileSync(archive);
    const chart = chartYamlOf(archive);
    const config = Buffer.from(JSON.stringify(chart));
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: HELM_CONFIG, digest: digestOf(config), size: config.length },
      layers: [{ mediaType: HELM_LAYER, digest: digestOf(layer), size: layer.length }],
      annotations: { 'org.opencontainers.image.title': chart.name, 'org.opencontainers.image.version': chart.version },
    }));
    const tags = this.oci.get(repository) ?? new Map<string, Artifact>();
    tags.set(String(chart.version), { manifest, blobs: new Map([[digestOf(config), config], [digestOf(layer), layer]]) });
    this.oci.set(repository, tags);
  }

  /** @internal answers one request of the registry's read API, or undefined when the path is not one. */
  serveOci(method: string, p: string, res: http.ServerResponse): number | undefined {
    if (p === '/v2/' || p === '/v2') {
      res.writeHead(200, { 'Docker-Distribution-API-Version': 'registry/2.0', 'Content-Type': 'application/json' }).end('{}');
      return 200;
    }
    const m = /^\/v2\/(.+)\/(manifests|blobs|tags)\/(.+)$/.exec(p);
    if (!m) return undefined;
    const [, repository, what, ref] = m;
    const tags = this.oci.get(repository);
    const notFound = () => {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ errors: [{ code: what === 'blobs' ? 'BLOB_UNKNOWN' : 'MANIFEST_UNKNOWN', message: `${repository} ${ref} unknown` }] }));
      return 404;
    };
    if (!tags) return notFound();
    if (what === 'tags' && ref === 'list') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ name: repository, tags: [...tags.keys()].sort() }));
      return 200;
    }
    if (what === 'manifests') {
      const a = tags.get(ref) ?? [...tags.values()].find((x) => digestOf(x.manifest) === ref);
      if (!a) return notFound();
      res.writeHead(200, { 'Content-Type': OCI_MANIFEST, 'Docker-Content-Digest': digestOf(a.manifest), 'Content-Length': a.manifest.length });
      res.end(method === 'HEAD' ? undefined : a.manifest);
      return 200;
    }
    const blob = [...tags.values()].map((a) => a.blobs.get(ref)).find((b) => b !== undefined);
    if (!blob) return notFound();
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': ref, 'Content-Length': blob.length });
    res.end(method === 'HEAD' ? undefined : blob);
    return 200;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** Chart.yaml of a chart archive (its first `<chart>/Chart.yaml`), parsed. */
function chartYamlOf(archive: string): Record<string, unknown> {
  const r = spawnSync('tar', ['-xzOf', archive, '--wildcards', '*/Chart.yaml'], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`tar ${archive}: ${r.stderr.trim()}`);
  return parse(r.stdout.split(/^---$/m)[0]) as Record<string, unknown>;
}

/** Serves the Helm repositories under `<root>/helm` and the registry on a free port of 127.0.0.1, read-only. */
export async function startChartMirror(root: string): Promise<ChartMirror> {
  mkdirSync(path.join(root, 'helm'), { recursive: true });
  let self: ChartMirror | undefined;
  const server = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
    const method = req.method ?? 'GET';
    const record = (status: number) => self!.requests.push({ method, path: p, status });
    if (method !== 'GET' && method !== 'HEAD') {
      record(405);
      res.writeHead(405).end();
      return;
    }
    const oci = self!.serveOci(method, p, res);
    if (oci !== undefined) {
      record(oci);
      return;
    }
    const m = /^\/helm\/([\w.-]+(?:\/[\w.-]+)*)\/([\w.-]+\.(?:yaml|tgz))$/.exec(p);
    const file = m ? path.join(root, 'helm', m[1], m[2]) : undefined;
    if (!file || !existsSync(file) || !readdirSync(path.dirname(file)).includes(path.basename(file))) {
      record(404);
      res.writeHead(404).end();
      return;
    }
    const body = readFileSync(file);
    record(200);
    res.writeHead(200, { 'Content-Type': file.endsWith('.yaml') ? 'text/yaml' : 'application/gzip', 'Content-Length': body.length });
    res.end(method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  self = new ChartMirror(root, server, (server.address() as net.AddressInfo).port);
  return self;
}
