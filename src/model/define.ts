import type { ClusterDescriptionInput } from './description';

/**
 * A cluster description written in TypeScript: `src/clusters/<name>.ts` containing
 * `export default defineCluster({ ... })`, beside the YAML and JSON ones.
 *
 * The argument is typed with the description schema's input type, so the compiler rejects an
 * unknown or misspelled field and a wrong value type; at load time the object goes through the
 * same validation as a YAML description (same defaults, same error messages).
 */
export function defineCluster(description: ClusterDescriptionInput): ClusterDescriptionInput {
  return description;
}
