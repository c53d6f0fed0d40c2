import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { fleetFiles } from '../../src/components/gitops/fleet';
import { OPTIONS } from '../../src/render/yaml';
import { emitYaml } from '../../src/render/yaml-emit';
import { descriptionFiles, loadModels, renderFleetOf, renderModel } from '../../src/synth/pipeline';
import { FIXTURE_CLUSTERS, seededRandom } from '../helpers';
import { SAMPLES } from '../validate-cache/corpus';

const viaPackage = (v: unknown) => stringify(v, OPTIONS);

/** Every object the fixture clusters and their fleet render. */
function renderedObjects(): unknown[] {
  const clusters = loadModels(descriptionFiles(FIXTURE_CLUSTERS)).map(renderModel);
  const fleet = renderFleetOf(clusters);
  expect(fleetFiles(fleet).length).toBeGreaterThan(0);
  return [...clusters.flatMap((c) => c.folders.flatMap((f) => f.objects)), ...fleet.objects];
}

/** Pieces of strings that hit every rule of plain, quoted and block scalars. */
const PIECES = ['a', 'b', 'x y', ' ', '  ', '\n', '\n\n', '\t', ':', ': ', '#', ' #', '-', '- ', '?', '? ', '"', '\'', '|', '>', '%', '---', '...',
  '0', '12', '-7', '1.5', '.5', '1e3', '0x1F', '0o7', '.inf', '.NaN', 'true', 'False', 'null', 'NULL', '~', ',', '[', ']', '{', '}', '*', '&', '!', '@', '`',
  'é', '\u2028', '\r', '\x01', '\x7f', '\u00a0'];

function generated(count: number): unknown[] {
  const rnd = seededRandom(22);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const str = () => Array.from({ length: Math.floor(rnd() * 6) }, () => pick(PIECES)).join('');
  const value = (depth: number): unknown => {
    const r = rnd();
    if (depth > 3 || r < 0.45) {
      const scalars: (() => unknown)[] = [
        str, str, str, () => Math.floor(rnd() * 2e6) - 1e6, () => rnd() * 10, () => null, () => rnd() < 0.5, () => -0, () => 1e21,
      ];
      return pick(scalars)();
    }
    if (r < 0.7) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, () => [str(), value(depth + 1)]));
  };
  return Array.from({ length: count }, () => (rnd() < 0.5 ? { root: value(0), other: value(0) } : [value(0), value(0)]));
}

describe('the direct YAML emitter writes what the yaml package writes', () => {
  it('for every object the repository renders, and it never leaves one to the package', () => {
    const objects = renderedObjects();
    expect(objects.length).toBeGreaterThan(100);
    for (const o of objects) {
      const emitted = emitYaml(o);
      expect(emitted, JSON.stringify(o).slice(0, 200)).toBeDefined();
      expect(emitted).toBe(viaPackage(o));
    }
  });

  it.skipIf(!existsSync(SAMPLES))('for the upstream example manifests', () => {
    const dir = SAMPLES;
    let compared = 0;
    for (const f of readdirSync(dir, { recursive: true }) as string[]) {
      if (!/\.ya?ml$/.test(f)) continue;
      for (const doc of parseAllDocuments(readFileSync(path.join(dir, f), 'utf8'))) {
        if ('errors' in doc && doc.errors.length > 0) continue;
        const v = doc.toJS();
        if (typeof v !== 'object' || v === null) continue;
        const emitted = emitYaml(v);
        if (emitted !== undefined) compared += 1;
        if (emitted !== undefined) expect(emitted, f).toBe(viaPackage(v));
      }
    }
    expect(compared).toBeGreaterThan(10);
  });

  it('for generated values full of indicators, quotes, numbers-as-strings, line breaks and blank lines', () => {
    let compared = 0;
    for (const v of generated(20_000)) {
      const emitted = emitYaml(v);
      if (emitted === undefined) continue;
      compared += 1;
      expect(emitted, JSON.stringify(v)).toBe(viaPackage(v));
    }
    expect(compared).toBeGreaterThan(5_000);
  });

  it.each([
    ['block scalars: clip, strip, keep, leading spaces and blank lines', { a: 'x\n y\n', b: 'x\ny', c: 'a\n\n\n', d: '  lead\nx', e: '\nfoo\n', f: 'a\n\nb\n' }],
    ['strings that would read as other types are quoted', { 'a': 'true', 'b': '8080', 'c': '', 'd': '~', 'e': '1e3', 'f': '0x1F', 'g': '.inf', '8080': 1, '': 'x' }],
    ['quotes and indicators', { a: '"q"', b: '\'q\'', c: '- a', d: 'a: b', e: '#x', f: 'x #y', g: 'trail ', h: '-', i: 'a\tb' }],
    ['numbers', { a: 1e21, b: -0, c: 0.5, d: -3, e: 1.25e-7 }],
    ['empty and nested collections', { a: [], b: {}, c: [[], {}, [1, [2]], { x: [] }], d: [{ a: 1, b: [1, 2] }, ['x', 'y']] }],
    ['undefined values are left out, as the package does', { a: undefined, b: 1 }],
  ])('%s', (_name, v) => {
    expect(emitYaml(v)).toBe(viaPackage(v));
  });

  it.each([
    ['control characters', { a: 'x\x01y' }],
    ['carriage returns', { a: 'x\r\ny' }],
    ['a multi-line string ending in spaces', { a: 'x\n  ' }],
    ['a key on two lines', { 'a\nb': 1 }],
    ['a document marker in a key', { '---': 1 }],
    ['a key over 1024 characters', { ['k'.repeat(1100)]: 1 }],
    ['a Map', { a: new Map() }],
    ['a Date', { a: new Date(0) }],
    ['an undefined item', { a: [undefined] }],
    ['a BigInt', { a: BigInt(1) }],
  ])('leaves %s to the package', (_name, v) => {
    expect(emitYaml(v)).toBeUndefined();
  });
});
