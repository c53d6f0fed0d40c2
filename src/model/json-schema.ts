import { z } from 'zod';
import { ClusterDescriptionSchema } from './description';
import { FleetDescriptionSchema } from './fleet';
import { FLEET_SCHEMA_FILE_NAME } from '../paths';

/**
 * JSON Schema of the cluster description as a user writes it (defaults optional), for editors:
 * add `# yaml-language-server: $schema=./cluster-description.schema.json` to a description.
 */
export function descriptionJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(ClusterDescriptionSchema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }),
    $id: 'https://gpu-cluster-manifests.dev/cluster-description.schema.json',
    title: 'GPU cluster description',
  };
}

/** The schema file as committed under src/clusters/. */
export function descriptionJsonSchemaText(): string {
  return `${JSON.stringify(descriptionJsonSchema(), undefined, 2)}\n`;
}

export { FLEET_SCHEMA_FILE_NAME } from '../paths';

/** JSON Schema of the fleet description (fleet.yaml), for editors. */
export function fleetJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(FleetDescriptionSchema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }),
    $id: `https://gpu-cluster-manifests.dev/${FLEET_SCHEMA_FILE_NAME}`,
    title: 'GPU cluster fleet description',
  };
}

export function fleetJsonSchemaText(): string {
  return `${JSON.stringify(fleetJsonSchema(), undefined, 2)}\n`;
}

interface JsonSchemaNode {
  type?: string | string[];
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  required?: string[];
  additionalProperties?: JsonSchemaNode | boolean;
}

function typeOf(n: JsonSchemaNode): string {
  if (n.enum) return n.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (n.anyOf) return [...new Set(n.anyOf.map(typeOf))].join(' | ');
  if (n.type === 'array') return `list of ${n.items ? typeOf(n.items) : 'any'}`;
  if (n.type === 'object' && !n.properties && n.additionalProperties && typeof n.additionalProperties === 'object') return 'map';
  return Array.isArray(n.type) ? n.type.join(' | ') : (n.type ?? 'any');
}

function cell(v: string): string {
  return v.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** Markdown table of every field of the description (path, type, default, meaning), for docs/description.md; of the fleet description with `fleet`. */
export function descriptionFieldTable(fleet = false): string {
  const rows: string[] = ['| field | type | default | meaning |', '|---|---|---|---|'];
  const walk = (node: JsonSchemaNode, prefix: string, required: boolean) => {
    const props = node.properties ?? (node.type === 'array' && node.items?.properties ? node.items.properties : undefined);
    const owner = node.type === 'array' && node.items ? node.items : node;
    if (prefix) {
      const def = node.default === undefined ? (required ? '**required**' : '') : `\`${JSON.stringify(node.default)}\``;
      rows.push(`| \`${prefix}\` | ${cell(typeOf(node))} | ${cell(def)} | ${cell(node.description ?? '')} |`);
    }
    if (!props) return;
    for (const [name, child] of Object.entries(props)) {
      const p = prefix ? `${prefix}${node.type === 'array' ? '[]' : ''}.${name}` : name;
      walk(child, p, (owner.required ?? []).includes(name));
    }
  };
  walk((fleet ? fleetJsonSchema() : descriptionJsonSchema()) as JsonSchemaNode, '', true);
  return `${rows.join('\n')}\n`;
}

export const README_MARKERS = { start: '<!-- description-reference:start -->', end: '<!-- description-reference:end -->' } as const;
export const FLEET_README_MARKERS = { start: '<!-- fleet-reference:start -->', end: '<!-- fleet-reference:end -->' } as const;

function withSection(readme: string, markers: { readonly start: string; readonly end: string }, table: string): string {
  const start = readme.indexOf(markers.start);
  const end = readme.indexOf(markers.end);
  if (start < 0 || end < start) throw new Error(`the README has no ${markers.start} ... ${markers.end} section`);
  return `${readme.slice(0, start + markers.start.length)}\n${table}${readme.slice(end)}`;
}

/** The README with its description reference section regenerated (between README_MARKERS), and its fleet reference (FLEET_README_MARKERS) when it has one. */
export function withDescriptionReference(readme: string): string {
  const cluster = withSection(readme, README_MARKERS, descriptionFieldTable());
  return cluster.includes(FLEET_README_MARKERS.start) ? withSection(cluster, FLEET_README_MARKERS, descriptionFieldTable(true)) : cluster;
}
