/**
 * Job steps take their unset settings from the definitions catalog at enqueue
 * (src/queue/definitions.ts): the step's own setting, else its job type's
 * catalog default, else the built-in default (src/queue/defaults.ts). The
 * values are written on the step row (and its job when it is a root), so a
 * later catalog change does not move a run already enqueued. One read for
 * every job type of the batch, and none when every step sets everything.
 */
import type { Tx } from '../client/types.js';
import { catalogDefaults } from '../queue/definitions.js';
import type { ValidatedStep, ValidatedWorkflowRun } from './definition.js';

type JobStep = Extract<ValidatedStep, { kind: 'job' }>;

function inheritsAny(step: ValidatedStep): step is JobStep {
  return step.kind === 'job' && (step.inherits?.length ?? 0) > 0;
}

/** `runs` with each job step's inherited settings replaced by its type's catalog defaults (the same objects when none apply). */
export async function withCatalogDefaults(tx: Tx, runs: readonly ValidatedWorkflowRun[]): Promise<ValidatedWorkflowRun[]> {
  const types = new Set(runs.flatMap((run) => run.steps.filter(inheritsAny).map((step) => step.jobType)));
  if (types.size === 0) return [...runs];
  const defaults = await catalogDefaults(tx, [...types]);
  if (defaults.size === 0) return [...runs];
  return runs.map((run) => ({ ...run, steps: applyCatalogDefaults(run.steps, defaults) }));
}

/** The steps with inherited settings taken from `defaults` (job type -> catalog defaults). */
export function applyCatalogDefaults<S extends ValidatedStep>(steps: readonly S[], defaults: ReadonlyMap<string, { priority: number; maxAttempts: number; timeoutSeconds: number }>): S[] {
  return steps.map((step) => {
    if (!inheritsAny(step)) return step;
    const found = defaults.get(step.jobType);
    if (!found) return step;
    const resolved: JobStep = { ...step };
    for (const setting of step.inherits ?? []) resolved[setting] = found[setting];
    return resolved as S;
  });
}
