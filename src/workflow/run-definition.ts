/**
 * The plain-object form of a workflow run, its zod schema, and the DAG rules
 * checked before anything touches the database: non-blank unique step keys,
 * every dependency names an existing step, no self-edges, no duplicate edges,
 * no cycles (the error names one), at most one result step, external steps
 * carry no job settings. Each failure is a ValidationError naming the field.
 */
import { z } from 'zod';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS, type BackoffPolicy } from '../job/defaults.js';
import { backoffPolicySchema, resolveBackoff } from '../job/retry-policy.js';
import { concurrencySettingSchema, fairnessSettingSchema, rateLimitSettingSchema, stageLabel, type FairnessSetting } from '../queue/inputs.js';
import type { RateSetting } from '../queue/statements/rate-limits.js';
import { parseInput } from '../validation/parse.js';
import { topologicalOrder } from './topological.js';
import { parseCommonWorkflowRun } from './common-run-input.js';
import { int32, jsonInput, jsonObject, nonBlank, positiveInt, requestKey, storableText, organizationId } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';

export const WORKFLOW_INVALID_INPUT = 'workflow.invalid_input';
export const MAX_WORKFLOW_STEPS = 10_000;

const dependencySchema = z.strictObject({
  // A step key's name, at most 200 characters like the keys themselves: a longer one can match none.
  step: storableText.max(200, 'must be at most 200 characters (a step key)'),
  /** `on_success` (default): the prerequisite must succeed. `on_terminal`: any terminal outcome releases. */
  mode: z.enum(['on_success', 'on_terminal']).default('on_success'),
});

/** A job step's settings, as a run and an append take them (append-request.ts spreads these too). */
export const jobStepSettingsFields = {
  priority: int32.optional(),
  maxAttempts: positiveInt.optional(),
  timeoutSeconds: positiveInt.optional(),
  /** Execution resource of the step's job (see enqueueJob's \`resource\`). */
  resource: requestKey.optional(),
  /** Concurrency key and limit of the step's job (see enqueueJob's \`concurrency\`). */
  concurrency: concurrencySettingSchema.optional(),
  /** Rate limit of the step's job (see enqueueJob's \`rateLimit\`; `burst` defaults to `limit`). */
  rateLimit: rateLimitSettingSchema.optional(),
  /** Fairness key and weight of the step's job (see enqueueJob's \`fairness\`; `weight` defaults to 1). */
  fairness: fairnessSettingSchema.optional(),
  /** Retry backoff of the step's job (see enqueueJob's \`backoff\`); either field alone, the other defaulted. */
  backoff: backoffPolicySchema.optional(),
  /** Stage label of the step's job at enqueue (see enqueueJob's \`stage\`). */
  stage: stageLabel.optional(),
  /** The step's job may return continueNow / continueAfter (the step stays ENQUEUED between slices). */
  allowContinuation: z.boolean().optional(),
};

const jobStepSchema = z.strictObject({
  key: storableText,
  kind: z.literal('job'),
  jobType: nonBlank(200),
  payload: jsonInput,
  ...jobStepSettingsFields,
  dependsOn: z.array(dependencySchema).default([]),
  result: z.boolean().default(false),
});

const externalStepSchema = z.strictObject({
  key: storableText,
  kind: z.literal('external'),
  dependsOn: z.array(dependencySchema).default([]),
  result: z.boolean().default(false),
});

export const workflowRunInputSchema = z.strictObject({
  workflowType: nonBlank(200),
  organizationId: organizationId.nullish(),
  metadata: jsonObject.optional(),
  idempotencyKey: requestKey.optional(),
  steps: z
    .array(z.discriminatedUnion('kind', [jobStepSchema, externalStepSchema]))
    .min(1, 'a workflow needs at least one step')
    .max(MAX_WORKFLOW_STEPS),
});

export type WorkflowRunInput = z.input<typeof workflowRunInputSchema>;
export type WorkflowStepInput = WorkflowRunInput['steps'][number];
export type WorkflowDependencyInput = z.input<typeof dependencySchema>;

/** A validated run: job settings resolved to their defaults, steps in topological order. */
export interface ValidatedWorkflowRun {
  workflowType: string;
  organizationId: string | null;
  metadata: { [key: string]: JsonValue };
  idempotencyKey: string | null;
  resultStepKey: string | null;
  /** Topological order: every step comes after all of its prerequisites. */
  steps: ValidatedStep[];
}

export type ValidatedStep =
  | {
      key: string;
      kind: 'job';
      jobType: string;
      payload: JsonValue;
      priority: number;
      maxAttempts: number;
      timeoutSeconds: number;
      resourceKey: string | null;
      /** The step's job's concurrency key and limit; null: none. */
      concurrency: { key: string; limit: number } | null;
      /** The step's job's rate key and setting (burst resolved); null: none. */
      rateLimit: RateSetting | null;
      /** The step's job's fairness key and weight (weight resolved); null: none. */
      fairness: FairnessSetting | null;
      /** The step's own backoff, copied to its job; null: the job type's definition decides. */
      backoff: BackoffPolicy | null;
      /** The stage label of the step's job at enqueue; null: none. */
      stage: string | null;
      /** The step's job may continue instead of ending the step. */
      allowContinuation: boolean;
      dependsOn: ValidatedDependency[];
      /**
       * The settings the step left out (resolved above to the built-in defaults): at enqueue, the job type's
       * catalog row replaces them when it has one (src/queue/catalog.ts). Absent: none. Not part of
       * the idempotency snapshot.
       */
      inherits?: readonly InheritableSetting[];
    }
  | { key: string; kind: 'external'; dependsOn: ValidatedDependency[] };

export type InheritableSetting = 'priority' | 'maxAttempts' | 'timeoutSeconds';

export interface ValidatedDependency {
  step: string;
  mode: 'ON_SUCCESS' | 'ON_TERMINAL';
}

const JOB_SETTING_KEYS = [
  'jobType',
  'payload',
  'priority',
  'maxAttempts',
  'timeoutSeconds',
  'resource',
  'concurrency',
  'rateLimit',
  'fairness',
  'backoff',
  'stage',
  'allowContinuation',
] as const;

function fail(code: ErrorCode, field: string, message: string, details: Record<string, unknown> = {}): never {
  throw new ValidationError(code, field, message, { details });
}

/**
 * Before the schema: an external step given job settings gets this clearer
 * error than zod's "unrecognized key" (the common mistake). For runs and appends.
 */
export function refuseExternalStepJobSettings(input: unknown): void {
  const rawSteps = (input as { steps?: unknown } | null)?.steps;
  if (Array.isArray(rawSteps)) {
    rawSteps.forEach((step, index) => {
      if (step && typeof step === 'object' && (step as { kind?: unknown }).kind === 'external') {
        const setting = JOB_SETTING_KEYS.find((key) => key in step);
        if (setting) {
          fail(
            'workflow.external_step_job_settings',
            `steps.${index}.${setting}`,
            `External step "${String((step as { key?: unknown }).key)}" cannot have job settings (${setting}).`,
          );
        }
      }
    });
  }
}

/** Every step key is non-blank, at most 200 characters and used once; returns each key's index. For runs and appends. */
export function indexStepKeys(steps: readonly { key: string }[]): Map<string, number> {
  const indexByKey = new Map<string, number>();
  steps.forEach((step, index) => {
    if (step.key.trim().length === 0) fail('workflow.blank_step_key', `steps.${index}.key`, `Step ${index} has a blank key.`);
    if (step.key.length > 200) fail(WORKFLOW_INVALID_INPUT, `steps.${index}.key`, `Step key "${step.key.slice(0, 20)}..." is longer than 200 characters.`);
    const previous = indexByKey.get(step.key);
    if (previous !== undefined)
      fail('workflow.duplicate_step_key', `steps.${index}.key`, `Step key "${step.key}" is used by steps ${previous} and ${index}.`, { stepKey: step.key });
    indexByKey.set(step.key, index);
  });
  return indexByKey;
}

export function validateWorkflowRun(input: unknown): ValidatedWorkflowRun {
  refuseExternalStepJobSettings(input);
  const parsed = parseCommonWorkflowRun(input) ?? parseInput(workflowRunInputSchema, input, WORKFLOW_INVALID_INPUT);

  const indexByKey = indexStepKeys(parsed.steps);

  parsed.steps.forEach((step, index) => {
    const seen = new Set<string>();
    step.dependsOn.forEach((dependency, d) => {
      const field = `steps.${index}.dependsOn.${d}.step`;
      if (dependency.step === step.key) fail('workflow.self_dependency', field, `Step "${step.key}" depends on itself.`, { stepKey: step.key });
      if (!indexByKey.has(dependency.step)) {
        fail('workflow.unknown_prerequisite', field, `Step "${step.key}" depends on unknown step "${dependency.step}".`, {
          stepKey: step.key,
          prerequisite: dependency.step,
        });
      }
      if (seen.has(dependency.step)) {
        fail('workflow.duplicate_dependency', field, `Step "${step.key}" depends on "${dependency.step}" more than once.`, {
          stepKey: step.key,
          prerequisite: dependency.step,
        });
      }
      seen.add(dependency.step);
    });
  });

  // One limit per concurrency key in a run: the key's row takes one value.
  const limits = new Map<string, number>();
  parsed.steps.forEach((step, index) => {
    const concurrency = step.kind === 'job' && 'concurrency' in step ? (step.concurrency as { key: string; limit: number } | undefined) : undefined;
    if (concurrency === undefined) return;
    const seen = limits.get(concurrency.key);
    if (seen === undefined) limits.set(concurrency.key, concurrency.limit);
    else if (seen !== concurrency.limit)
      fail(
        WORKFLOW_INVALID_INPUT,
        `steps.${index}.concurrency.limit`,
        `Invalid steps.${index}.concurrency.limit: differs from an earlier step's limit (${seen}) for the same key`,
      );
  });

  checkOneRateLimitPerKey(parsed.steps);

  const resultSteps = parsed.steps.flatMap((step, index) => (step.result ? [{ step, index }] : []));
  if (resultSteps.length > 1) {
    const keys = resultSteps.map((r) => `"${r.step.key}"`).join(', ');
    fail('workflow.multiple_result_steps', `steps.${resultSteps[1]!.index}.result`, `A workflow has at most one result step; got ${keys}.`);
  }

  const order = orderSteps(parsed.steps);
  return {
    workflowType: parsed.workflowType,
    organizationId: parsed.organizationId ?? null,
    metadata: parsed.metadata ?? {},
    idempotencyKey: parsed.idempotencyKey ?? null,
    resultStepKey: resultSteps[0]?.step.key ?? null,
    steps: order.map((index) => {
      const step = parsed.steps[index]!;
      const dependsOn = step.dependsOn.map((d) => ({ step: d.step, mode: d.mode === 'on_terminal' ? ('ON_TERMINAL' as const) : ('ON_SUCCESS' as const) }));
      return resolveStep(step, dependsOn);
    }),
  };
}

/**
 * One rate limit per key among `steps` (a run's, or an append's new steps): the key's bucket row takes one
 * setting. For runs and appends.
 */
export function checkOneRateLimitPerKey(steps: readonly ({ kind: 'job'; rateLimit?: RateSetting | undefined } | { kind: 'external' })[]): void {
  const settings = new Map<string, RateSetting>();
  steps.forEach((step, index) => {
    const rate = step.kind === 'job' ? step.rateLimit : undefined;
    if (rate === undefined) return;
    const seen = settings.get(rate.key);
    if (seen === undefined) settings.set(rate.key, rate);
    else if (seen.limit !== rate.limit || seen.periodMs !== rate.periodMs || seen.burst !== rate.burst)
      fail(
        WORKFLOW_INVALID_INPUT,
        `steps.${index}.rateLimit`,
        `Invalid steps.${index}.rateLimit: differs from an earlier step's rate limit (${seen.limit} per ${seen.periodMs} ms, burst ${seen.burst}) for the same key`,
      );
  });
}

/** A parsed step with its job settings resolved to their defaults (run validation and appends alike). */
export function resolveStep(
  step:
    | {
        key: string;
        kind: 'job';
        jobType: string;
        payload: JsonValue;
        priority?: number | undefined;
        maxAttempts?: number | undefined;
        timeoutSeconds?: number | undefined;
        resource?: string | undefined;
        concurrency?: { key: string; limit: number } | undefined;
        rateLimit?: RateSetting | undefined;
        fairness?: FairnessSetting | undefined;
        backoff?: Parameters<typeof resolveBackoff>[0] | undefined;
        stage?: string | undefined;
        allowContinuation?: boolean | undefined;
      }
    | { key: string; kind: 'external' },
  dependsOn: ValidatedDependency[],
): ValidatedStep {
  return step.kind === 'job'
    ? {
        key: step.key,
        kind: 'job',
        jobType: step.jobType,
        payload: step.payload,
        priority: step.priority ?? DEFAULT_PRIORITY,
        maxAttempts: step.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        timeoutSeconds: step.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
        resourceKey: step.resource ?? null,
        concurrency: step.concurrency ?? null,
        rateLimit: step.rateLimit ?? null,
        fairness: step.fairness ?? null,
        backoff: step.backoff === undefined ? null : resolveBackoff(step.backoff),
        stage: step.stage ?? null,
        allowContinuation: step.allowContinuation ?? false,
        dependsOn,
        inherits: (['priority', 'maxAttempts', 'timeoutSeconds'] as const).filter((setting) => step[setting] === undefined),
      }
    : { key: step.key, kind: 'external', dependsOn };
}

/** Steps in topological order; a cycle is `workflow.cycle`, named step by step. */
function orderSteps(steps: readonly { key: string; dependsOn: readonly { step: string }[] }[]): number[] {
  const { order, cycle } = topologicalOrder(
    steps.map((step) => step.key),
    (index) => steps[index]!.dependsOn.map((d) => d.step),
  );
  if (order) return order;
  const names = [...cycle, cycle[0]!].map((index) => steps[index]!.key);
  fail('workflow.cycle', `steps.${cycle[0]}.dependsOn`, `The dependencies form a cycle: ${names.join(' -> ')}.`, { cycle: names });
}
