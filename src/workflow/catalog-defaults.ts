/**
 * Job steps take their unset settings from the definitions catalog at enqueue
 * (src/queue/definitions.ts): the step's own setting, else its job type's
 * catalog default, else the built-in default (src/queue/defaults.ts). The
 * values are written on the step row (and its job when it is a root), so a
 * later catalog change does not move a run already enqueued. Enqueue: one
 * read for every job type of the batch, none when every step sets
 * everything. Appends: a subquery of the append's first read.
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

/** Job type -> [priority, maxAttempts, timeoutSeconds] from the catalog, as a read returns it. */
export type CatalogJson = Record<string, [number, number, number]>;

/** The job types whose steps leave a setting to the catalog. */
export function inheritedJobTypes(steps: readonly ValidatedStep[]): string[] {
  return [...new Set(steps.filter(inheritsAny).map((step) => step.jobType))];
}

/** Appended steps (`{ step }` holders) with their inherited settings from `catalog` (read by the append's first statement: job type -> [priority, maxAttempts, timeoutSeconds]). */
export function withCatalogDefaultsForSteps<P extends { step: ValidatedStep }>(planned: readonly P[], catalog: CatalogJson): P[] {
  const defaults = new Map(Object.entries(catalog).map(([type, [priority, maxAttempts, timeoutSeconds]]) => [type, { priority, maxAttempts, timeoutSeconds }]));
  if (defaults.size === 0) return [...planned];
  const steps = applyCatalogDefaults(planned.map((p) => p.step), defaults);
  return planned.map((p, index) => ({ ...p, step: steps[index]! }));
}
