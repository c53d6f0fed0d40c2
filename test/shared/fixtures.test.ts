import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { descriptionFiles } from '../../src/synth/pipeline';
import { FIXTURE_CLUSTERS, REFERENCE_FILE, SHARED, TRAINING_FILE } from '../helpers';

/* The descriptions the tests read are fixtures of their own, not the examples of src/clusters/. */

describe('the fixture clusters', () => {
  const reference = path.join(SHARED, 'reference', 'instant-cluster.yaml');
  it.skipIf(!existsSync(reference))('the reference fixture is the reference description of ../shared (comments aside)', () => {
    expect(parse(readFileSync(REFERENCE_FILE, 'utf8'))).toEqual(parse(readFileSync(reference, 'utf8')));
  });

  it('are a descriptions folder of exactly the reference and the training cluster', () => {
    expect(descriptionFiles(FIXTURE_CLUSTERS)).toEqual([REFERENCE_FILE, TRAINING_FILE]);
  });
});
