import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM, PACKAGE_ROOT } from '../src/paths';

// The paths tests read, without the render stack test/helpers.ts imports (a file that only starts children
// imports these from here: loading the pipeline costs some 4 s CPU per test file).

export const ROOT = PACKAGE_ROOT;
/**
 * The descriptions tests render: fixtures, a folder of clusters as a project has one. The examples of
 * src/clusters/ are examples: adding, changing or removing one changes no test result, except those of
 * the tests about "whatever src/clusters/ holds" (EXAMPLES_DIR), which pass for any valid examples.
 */
export const FIXTURE_CLUSTERS = path.join(ROOT, 'test', 'fixtures', 'clusters');
/** A MultiKueue fleet (fleet.yaml beside its descriptions): manager hub, workers lab-a (Secret) and lab-b (ClusterProfile). */
export const FLEET_FIXTURE = path.join(ROOT, 'test', 'fixtures', 'fleets', 'multikueue');
/** The reference description (../shared/reference/instant-cluster.yaml): a two-worker Instant Cluster. */
export const REFERENCE_FILE = path.join(FIXTURE_CLUSTERS, 'instant-cluster.yaml');
/** A larger fleet member: 16 GPU workers, five tenants, the add-ons managed by Argo CD. */
export const TRAINING_FILE = path.join(FIXTURE_CLUSTERS, 'training-cluster.yaml');
/** The examples of this repository (its project's descriptions): only tests about whatever they are read them. */
export const EXAMPLES_DIR = path.join(ROOT, 'src', 'clusters');
export const SHARED = path.resolve(ROOT, '..', 'shared');
/** The compiled command line (`npm test` compiles first): what the package's bin and the npm scripts run. */
export const BIN = path.join(ROOT, 'lib', 'src', 'bin.js');

/** True when ../shared/crds exists; schema tests are skipped (and reported as skipped) otherwise. */
export const HAS_SCHEMAS = existsSync(path.join(DEFAULT_SCHEMAS, 'kubernetes'));
/** The vendored upstream charts and manifests (../shared/upstream-installs); upstream tests skip without them. */
export const HAS_UPSTREAM = existsSync(DEFAULT_UPSTREAM);
