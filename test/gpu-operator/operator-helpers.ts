import { DescriptionError } from '../../src/model/load';
import { Manifest } from '../../src/render/manifest';
import { ValidationIssue } from '../../src/validate/validator';
import { modelOf, referenceInput, validator } from '../helpers';

/** An edit of the reference description (raw input). */
export type Edit = (d: ReturnType<typeof referenceInput>) => void;

/** The description issues (path, message) of the reference description with `edit` applied; [] when valid. */
export function issuesOf(edit: Edit): { path: string; message: string }[] {
  try {
    modelOf(edit);
  } catch (e) {
    if (e instanceof DescriptionError) return [...e.issues];
    throw e;
  }
  return [];
}

/** Strict schema errors of `objects` (warnings dropped). */
export function strictErrors(objects: readonly Manifest[]): ValidationIssue[] {
  return objects.flatMap((m) => validator().validate(m)).filter((i) => i.severity === 'error');
}
