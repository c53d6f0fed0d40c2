import { stringify } from 'yaml';

const OPTIONS = { lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false, indentSeq: true } as const;

/** One YAML document, stable and diff-friendly (no line folding, no anchors). */
export function toYaml(value: unknown): string {
  return stringify(value, OPTIONS);
}
