/**
 * The input of `appendWorkflowSteps`, its zod schema, and the checks that need
 * no database: step keys non-blank and unique within the request, no
 * self-edge, no duplicate edge, no cycle among the new steps, job settings
 * resolved to their defaults, and the canonical form stored per mutation key.
 *
 * The checks against the run (append.ts) come later, under its locks: new
 * keys unused in the run, every prerequisite an existing or new step, every
 * dependent a NEW step (existing steps cannot gain prerequisites), the
 * window, the run's step limit.
 *
 * Why no cycle can pass through old and new steps: the existing DAG is
 * acyclic, and every appended edge ends at a new step. A cycle through an old
 * step would need an edge into it, and there is none; so a cycle lies wholly
 * among the new steps, and that is what `orderNewSteps` rules out.
 */
import { z } from 'zod';
import { scopeSchema } from '../db/scope.js';
import type { ErrorCode } from '../errors/codes.js';
import { ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { topologicalOrder } from './topological.js';
import { jsonValue, nonBlank, requestKey, storableText, uuid } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';
import type { Scope } from '../db/scope.js';
import {
  MAX_WORKFLOW_STEPS,
  WORKFLOW_INVALID_INPUT,
  type ValidatedDependency,
  type ValidatedStep,
  checkOneRateLimitPerKey,
  indexStepKeys,
  jobStepSettingsFields,
  refuseExternalStepJobSettings,
  resolveStep,
} from './run-definition.js';

const appendJobStepSchema = z.strictObject({
  key: storableText,
  kind: z.literal('job'),
  jobType: nonBlank(200),
  payload: jsonValue,
  ...jobStepSettingsFields,
});

const appendExternalStepSchema = z.strictObject({ key: storableText, kind: z.literal('external') });

const appendEdgeSchema = z.strictObject({
  // Names of step keys, which are at most 200 characters: a longer name can match none.
  prerequisite: storableText.max(200, 'must be at most 200 characters (a step key)'),
  dependent: storableText.max(200, 'must be at most 200 characters (a step key)'),
  /** `on_success` (default): the prerequisite must succeed. `on_terminal`: any terminal outcome releases. */
  mode: z.enum(['on_success', 'on_terminal']).default('on_success'),
});

export const appendWorkflowStepsSchema = z.strictObject({
  workflowRunId: uuid,
  scope: scopeSchema,
  /** Idempotency of the append within its run: non-blank, at most 512 bytes. */
  mutationKey: requestKey,
  /** Key of an external step that must still be open (WAITING_FOR_EXTERNAL) for the append to be accepted. */
  window: nonBlank(200).optional(),
  steps: z
    .array(z.discriminatedUnion('kind', [appendJobStepSchema, appendExternalStepSchema]))
    .min(1, 'an append needs at least one step')
    .max(MAX_WORKFLOW_STEPS),
  edges: z
    .array(appendEdgeSchema)
    .max(MAX_WORKFLOW_STEPS * 10)
    .default([]),
});

export interface AppendWorkflowStepsInput {
  workflowRunId: string;
  scope: Scope;
  mutationKey: string;
  /** An open append window: the key of an external step still WAITING_FOR_EXTERNAL. */
  window?: string;
  steps: (
    | {
        key: string;
        kind: 'job';
        jobType: string;
        payload: JsonValue;
        priority?: number;
        maxAttempts?: number;
        timeoutSeconds?: number;
        /** Execution resource of the step's job (see enqueueJob). */
        resource?: string;
        /** Concurrency key and limit of the step's job (see enqueueJob). */
        concurrency?: { key: string; limit: number };
        /** Rate limit of the step's job (see enqueueJob); `burst` defaults to `limit`. */
        rateLimit?: { key: string; limit: number; periodMs: number; burst?: number };
        /** Fairness key and weight of the step's job (see enqueueJob); `weight` defaults to 1. */
        fairness?: { key: string; weight?: number };
        /** Retry backoff of the step's job (see enqueueJob); either field alone, the other defaulted. */
        backoff?: { baseDelayMs?: number; maxDelayMs?: number };
        /** Stage label of the step's job (see enqueueJob). */
        stage?: string;
        /** The step's job may continue (see the workflow builder). */
        allowContinuation?: boolean;
      }
    | { key: string; kind: 'external' }
  )[];
  /** `dependent` must be one of `steps`; `prerequisite` an existing step of the run or one of `steps`. */
  edges?: { prerequisite: string; dependent: string; mode?: 'on_success' | 'on_terminal' }[];
}

export interface ValidatedAppend {
  workflowRunId: string;
  scope: Scope;
  mutationKey: string;
  window: string | null;
  /** The new step keys in the caller's order. */
  inputOrder: string[];
  /** Topological order among the new steps; `dependsOn` lists every prerequisite, existing or new. */
  steps: ValidatedStep[];
  /** The edges as given (their index names the field of an error found under the run's locks). */
  edges: { prerequisite: string; dependent: string; mode: 'on_success' | 'on_terminal' }[];
  canonical: JsonValue;
}

function fail(code: ErrorCode, field: string, message: string, details: Record<string, unknown> = {}): never {
  throw new ValidationError(code, field, message, { details });
}

export const edgeId = (dependent: string, prerequisite: string): string => JSON.stringify([dependent, prerequisite]);

export function validateAppend(input: unknown): ValidatedAppend {
  refuseExternalStepJobSettings(input);
  const parsed = parseInput(appendWorkflowStepsSchema, input, WORKFLOW_INVALID_INPUT);

  const indexByKey = indexStepKeys(parsed.steps);
  checkOneRateLimitPerKey(parsed.steps);

  const dependsOn: ValidatedDependency[][] = parsed.steps.map(() => []);
  const edgeIndex = new Map<string, number>();
  parsed.edges.forEach((edge, index) => {
    if (edge.prerequisite === edge.dependent)
      fail('workflow.self_dependency', `edges.${index}.prerequisite`, `Step "${edge.dependent}" depends on itself.`, { stepKey: edge.dependent });
    const id = edgeId(edge.dependent, edge.prerequisite);
    if (edgeIndex.has(id)) {
      fail('workflow.duplicate_dependency', `edges.${index}`, `Step "${edge.dependent}" depends on "${edge.prerequisite}" more than once.`, {
        stepKey: edge.dependent,
        prerequisite: edge.prerequisite,
      });
    }
    edgeIndex.set(id, index);
    const dependent = indexByKey.get(edge.dependent);
    // Whether it names an existing step (refused) or nothing at all is known only under the run's locks.
    if (dependent === undefined) return;
    dependsOn[dependent]!.push({ step: edge.prerequisite, mode: edge.mode === 'on_terminal' ? 'ON_TERMINAL' : 'ON_SUCCESS' });
  });

  const order = orderNewSteps(
    parsed.steps.map((step, index) => ({ key: step.key, newPrerequisites: dependsOn[index]!.map((d) => d.step).filter((key) => indexByKey.has(key)) })),
    edgeIndex,
  );
  const steps: ValidatedStep[] = order.map((index) => resolveStep(parsed.steps[index]!, dependsOn[index]!));

  return {
    workflowRunId: parsed.workflowRunId,
    scope: parsed.scope,
    mutationKey: parsed.mutationKey,
    window: parsed.window ?? null,
    inputOrder: parsed.steps.map((step) => step.key),
    steps,
    edges: parsed.edges,
    canonical: canonicalAppend(parsed.window ?? null, steps, parsed.edges),
  };
}

/** The new steps in topological order over the new steps' edges only (see the module comment); a cycle is named. */
function orderNewSteps(steps: readonly { key: string; newPrerequisites: readonly string[] }[], edgeIndex: ReadonlyMap<string, number>): number[] {
  const { order, cycle } = topologicalOrder(
    steps.map((step) => step.key),
    (index) => steps[index]!.newPrerequisites,
  );
  if (order) return order;
  const names = [...cycle, cycle[0]!].map((index) => steps[index]!.key);
  const first = edgeIndex.get(edgeId(names[1]!, names[0]!));
  fail('workflow.cycle', first === undefined ? 'edges' : `edges.${first}`, `The dependencies form a cycle: ${names.join(' -> ')}.`, { cycle: names });
}

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * What a mutation key is bound to: the window, the steps sorted by key with
 * their settings resolved, the edges sorted by (dependent, prerequisite). So
 * a retry that lists the same steps and edges in another order, or spells a
 * default out, is the same request; compared as jsonb (key order and number
 * spelling do not matter).
 */
function canonicalAppend(
  window: string | null,
  steps: readonly ValidatedStep[],
  edges: readonly { prerequisite: string; dependent: string; mode: 'on_success' | 'on_terminal' }[],
): JsonValue {
  return {
    window,
    steps: [...steps]
      .sort((a, b) => byKey(a.key, b.key))
      .map((step) => {
        // A null backoff, stage, rate limit or fairness, and a continuation not allowed, are left out, so requests stored before they existed still compare equal.
        // `inherits` (which settings the catalog may fill in) is left out: a default spelled out is the same request.
        const { dependsOn: _dependsOn, ...rest } = step;
        const omitted: Record<string, unknown> = { ...rest };
        delete omitted.inherits;
        if (step.kind === 'job' && step.backoff === null) delete omitted.backoff;
        if (step.kind === 'job' && step.stage === null) delete omitted.stage;
        if (step.kind === 'job' && step.rateLimit === null) delete omitted.rateLimit;
        if (step.kind === 'job' && step.fairness === null) delete omitted.fairness;
        if (step.kind === 'job' && !step.allowContinuation) delete omitted.allowContinuation;
        return omitted as unknown as JsonValue;
      }),
    edges: [...edges]
      .sort((a, b) => byKey(a.dependent, b.dependent) || byKey(a.prerequisite, b.prerequisite))
      .map((edge) => ({ prerequisite: edge.prerequisite, dependent: edge.dependent, mode: edge.mode })),
  };
}
