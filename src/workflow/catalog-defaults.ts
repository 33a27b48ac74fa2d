/**
 * Job steps take their unset settings from the definitions catalog at enqueue
 * (src/queue/catalog.ts): the step's own setting, else its job type's
 * catalog default, else the built-in default (src/job/defaults.ts). The
 * values are written on the step row (and its job when it is a root), so a
 * later catalog change does not move a run already enqueued. No statement
 * of its own: the catalog rides, as an uncorrelated subquery (evaluated
 * once), on the enqueue's run INSERT and on the append's first read.
 */
import type { ValidatedStep } from './run-definition.js';

type JobStep = Extract<ValidatedStep, { kind: 'job' }>;

function inheritsAny(step: ValidatedStep): step is JobStep {
  return step.kind === 'job' && (step.inherits?.length ?? 0) > 0;
}

/** The steps with inherited settings taken from `defaults` (job type -> catalog defaults). */
export function applyCatalogDefaults<S extends ValidatedStep>(
  steps: readonly S[],
  defaults: ReadonlyMap<string, { priority: number; maxAttempts: number; timeoutSeconds: number }>,
): S[] {
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

/** `steps` with their inherited settings taken from `catalog` (as the enqueue's or append's first statement read it). */
export function applyCatalogJson<S extends ValidatedStep>(steps: readonly S[], catalog: CatalogJson): S[] {
  const defaults = new Map(Object.entries(catalog).map(([type, [priority, maxAttempts, timeoutSeconds]]) => [type, { priority, maxAttempts, timeoutSeconds }]));
  return defaults.size === 0 ? [...steps] : applyCatalogDefaults(steps, defaults);
}

/** Appended steps (`{ step }` holders) with their inherited settings from `catalog`. */
export function withCatalogDefaultsForSteps<P extends { step: ValidatedStep }>(planned: readonly P[], catalog: CatalogJson): P[] {
  const steps = applyCatalogJson(
    planned.map((p) => p.step),
    catalog,
  );
  return planned.map((p, index) => ({ ...p, step: steps[index]! }));
}
