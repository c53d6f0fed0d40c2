import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import Ajv, { AnySchema, ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { RenderedCluster } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { Edit, renderOf, SHARED, TRAINING_FILE } from '../helpers';

/**
 * The SkyPilot client files must work with a released SkyPilot. SkyPilot validates `~/.sky/config.yaml`
 * and task files against the JSON Schemas of `sky/utils/schemas.py` (`get_config_schema`,
 * `get_task_schema`, and `get_resources_schema` for a task's `resources`). The schemas of tag v0.10.4
 * (commit c92512f7eb433d08ff6d6f753ba4833945ca833c, 2025-09-10) are dumped in
 * ../shared/skypilot-schemas/v0.10.4-server.json (how: its SOURCES.md). Every release through v0.10.4
 * refuses unknown keys there (`additionalProperties: false`), e.g. `kubernetes.namespace`, which only
 * SkyPilot's unreleased main accepts.
 */
const DIR = path.join(SHARED, 'skypilot-schemas');
const FILE = path.join(DIR, 'v0.10.4-server.json');
const RELEASE = { tag: 'v0.10.4', commit: 'c92512f7eb433d08ff6d6f753ba4833945ca833c' };

type Json = Record<string, unknown>;

/** Python's inline case-insensitive groups `(?i:...)` are no JavaScript; as plain groups they only get stricter. */
function jsPatterns(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsPatterns);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === 'pattern' && typeof x === 'string' ? x.split('(?i:').join('(?:') : jsPatterns(x)]));
}

/** SkyPilot's two custom keywords (sky/utils/schemas.py: validated by its own jsonschema extension). */
function withSkyPilotKeywords<T extends Ajv>(ajv: T): T {
  ajv.addKeyword({ keyword: 'case_insensitive_enum', type: 'string', schemaType: 'array', validate: (allowed: string[], v: string) => allowed.some((a) => a.toLowerCase() === v.toLowerCase()) });
  ajv.addKeyword({ keyword: 'case_sensitive_enum', type: 'string', schemaType: 'array', validate: (allowed: string[], v: string) => allowed.includes(v) });
  return ajv;
}

function validators(): { config: ValidateFunction; task: ValidateFunction; resources: ValidateFunction } {
  const schemas = JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, Json>;
  // Unknown keywords are errors; the upstream schemas' own loose typing (anyOf without types) is theirs.
  const options = { allErrors: true, strictSchema: true, strictTypes: false, strictTuples: false, strictRequired: false } as const;
  const compile = (name: string) => {
    const schema = jsPatterns(schemas[name]) as Json;
    const ajv = String(schema.$schema).includes('2020-12') ? withSkyPilotKeywords(new Ajv2020(options)) : withSkyPilotKeywords(new Ajv(options));
    return ajv.compile(schema as AnySchema);
  };
  return { config: compile('get_config_schema'), task: compile('get_task_schema'), resources: compile('get_resources_schema') };
}

const errors = (v: ValidateFunction, data: unknown) => (v(data) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`));

describe.skipIf(!existsSync(FILE))(`SkyPilot client files against released SkyPilot ${RELEASE.tag}`, () => {
  const v = validators();
  const training = renderCluster(buildModel(loadDescription(TRAINING_FILE)));
  const skypilot = (edit: Edit = () => {}): Edit => (d) => { d.tutorials = { skypilot: { enabled: true } }; edit(d); };
  const clusters: RenderedCluster[] = [renderOf(skypilot()), training, renderOf(skypilot((d) => { delete d.network.infiniband; }))];

  it('the schema dump names the release tag and commit it was read from', () => {
    const sources = readFileSync(path.join(DIR, 'SOURCES.md'), 'utf8');
    expect(sources).toContain(`\`${RELEASE.tag}\``);
    expect(sources).toContain(RELEASE.commit);
  });

  it('every config.yaml validates against get_config_schema', () => {
    let n = 0;
    for (const c of clusters) {
      for (const f of (c.clientFiles ?? []).filter((x) => x.path.endsWith('/config.yaml'))) {
        expect(errors(v.config, parse(f.content)), `${c.name} ${f.path}`).toEqual([]);
        n += 1;
      }
    }
    expect(n).toBeGreaterThanOrEqual(3 + 6);
  });

  it('every train.yaml validates against get_task_schema, and its resources against get_resources_schema', () => {
    for (const c of clusters) {
      for (const f of (c.clientFiles ?? []).filter((x) => x.path.endsWith('/train.yaml'))) {
        const task = parse(f.content);
        expect(errors(v.task, task), `${c.name} ${f.path}`).toEqual([]);
        expect(errors(v.resources, task.resources), `${c.name} ${f.path} resources`).toEqual([]);
      }
    }
  });

  it('refuses what the release does not know (the validators can fail)', () => {
    const config = parse((renderOf(skypilot()).clientFiles ?? []).find((f) => f.path === 'skypilot/research/config.yaml')!.content);
    config.kubernetes.namespace = 'research';
    expect(errors(v.config, config)).toEqual([expect.stringMatching(/^\/kubernetes must NOT have additional properties .*"additionalProperty":"namespace"/)]);
    expect(errors(v.config, { kubernetes: { networking: 'tunnel' } })).not.toEqual([]);
    expect(errors(v.resources, { infra: 'k8s/instant-cluster', accelerator: 'H100:8' })).not.toEqual([]);
  });
});
