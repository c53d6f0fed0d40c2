// Alone in its module: which files of a folder are descriptions, without the loader (zod, the TypeScript
// evaluator) behind it, for a caller that only lists them.

/** Description files: YAML, JSON (not a *.schema.json) or TypeScript (not a *.d.ts). */
export function isDescriptionFile(name: string): boolean {
  return /\.(ya?ml|json|ts)$/i.test(name) && !/\.(schema\.json|d\.ts)$/i.test(name);
}
