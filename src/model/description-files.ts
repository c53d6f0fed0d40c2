// Alone in its module: which files of a folder are descriptions, without the loader (zod, the TypeScript
// evaluator) behind it, for a caller that only lists them.

/** File name of the fleet description in a folder of cluster descriptions (model/fleet.ts), never a cluster description itself. */
export const FLEET_FILE = 'fleet.yaml';

/** Description files: YAML, JSON (not a *.schema.json) or TypeScript (not a *.d.ts); never the fleet description (fleet.yaml). */
export function isDescriptionFile(name: string): boolean {
  return /\.(ya?ml|json|ts)$/i.test(name) && !/\.(schema\.json|d\.ts)$/i.test(name) && name !== FLEET_FILE;
}
