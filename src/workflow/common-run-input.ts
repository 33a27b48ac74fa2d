/**
 * The common workflow run checked without zod: what `workflow(...).job(...).build()` makes (run fields,
 * job steps with their type, payload and numeric settings, external steps, dependencies and the result
 * flag), each value plain and valid by the schema's own rules (run-definition.ts: the same storable-text
 * and storable-JSON walks, the same bounds and defaults). Anything else (another field, a resource, backoff
 * or stage, a field present but undefined, any value the schema would refuse) returns undefined and goes
 * through `workflowRunInputSchema`, which names the field. zod's parse of a 3-step chain was about a quarter
 * of its start's client CPU (bench/README.md, "Enqueue's client CPU"). The DAG rules run after either.
 */
import type { JsonValue } from '../model/json.js';
import { findJsonProblem, textProblem } from '../validation/storable.js';
import { MAX_ORGANIZATION_ID_LENGTH } from '../validation/primitives.js';

/** The schema's output for the inputs taken here (run-definition.ts assigns it to its own parsed type). */
export interface CommonWorkflowRun {
  workflowType: string;
  organizationId?: string | null;
  metadata?: { [key: string]: JsonValue };
  idempotencyKey?: string;
  steps: ParsedStep[];
}
type ParsedDependency = { step: string; mode: 'on_success' | 'on_terminal' };
type ParsedStep =
  | {
      key: string;
      kind: 'job';
      jobType: string;
      payload: JsonValue;
      priority?: number;
      maxAttempts?: number;
      timeoutSeconds?: number;
      allowContinuation?: boolean;
      dependsOn: ParsedDependency[];
      result: boolean;
    }
  | { key: string; kind: 'external'; dependsOn: ParsedDependency[]; result: boolean };

const RUN_FIELDS = new Set(['workflowType', 'organizationId', 'metadata', 'idempotencyKey', 'steps']);
const JOB_STEP_FIELDS = new Set(['key', 'kind', 'jobType', 'payload', 'dependsOn', 'result', 'priority', 'maxAttempts', 'timeoutSeconds', 'allowContinuation']);
const EXTERNAL_STEP_FIELDS = new Set(['key', 'kind', 'dependsOn', 'result']);
const DEPENDENCY_FIELDS = new Set(['step', 'mode']);
/** The schema's MAX_WORKFLOW_STEPS (run-definition.ts imports this module's type only). */
const MAX_STEPS = 10_000;

export function parseCommonWorkflowRun(input: unknown): CommonWorkflowRun | undefined {
  const run = plainWithOnly(input, RUN_FIELDS);
  if (run === undefined || !nonBlankText(run.workflowType, 200)) return undefined;
  const parsed: CommonWorkflowRun = { workflowType: run.workflowType, steps: [] };
  if ('organizationId' in run) {
    if (run.organizationId !== null && !nonBlankText(run.organizationId, MAX_ORGANIZATION_ID_LENGTH)) return undefined;
    parsed.organizationId = run.organizationId;
  }
  if ('metadata' in run) {
    const metadata = run.metadata;
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata) || findJsonProblem(metadata) !== undefined) return undefined;
    parsed.metadata = metadata as { [key: string]: JsonValue };
  }
  if ('idempotencyKey' in run) {
    const key = run.idempotencyKey;
    if (!nonBlankText(key, Number.POSITIVE_INFINITY) || Buffer.byteLength(key, 'utf8') > 512) return undefined;
    parsed.idempotencyKey = key;
  }
  const steps = run.steps;
  if (!Array.isArray(steps) || steps.length < 1 || steps.length > MAX_STEPS) return undefined;
  for (let i = 0; i < steps.length; i++) {
    const step = commonStep(steps[i]);
    if (step === undefined) return undefined;
    parsed.steps.push(step);
  }
  return parsed;
}

function commonStep(input: unknown): ParsedStep | undefined {
  const kind = (input as { kind?: unknown } | null)?.kind;
  const step = plainWithOnly(input, kind === 'job' ? JOB_STEP_FIELDS : EXTERNAL_STEP_FIELDS);
  if (step === undefined || (kind !== 'job' && kind !== 'external') || !storableText(step.key, Number.POSITIVE_INFINITY)) return undefined;
  const dependsOn = 'dependsOn' in step ? commonDependencies(step.dependsOn) : [];
  if (dependsOn === undefined) return undefined;
  const result = 'result' in step ? step.result : false;
  if (typeof result !== 'boolean') return undefined;
  if (kind === 'external') return { key: step.key, kind, dependsOn, result };
  if (!nonBlankText(step.jobType, 200) || !('payload' in step) || findJsonProblem(step.payload) !== undefined) return undefined;
  const job: ParsedStep & { kind: 'job' } = { key: step.key, kind, jobType: step.jobType, payload: step.payload as JsonValue, dependsOn, result };
  if ('priority' in step) {
    if (!integerIn(step.priority, -2147483648)) return undefined;
    job.priority = step.priority;
  }
  if ('maxAttempts' in step) {
    if (!integerIn(step.maxAttempts, 1)) return undefined;
    job.maxAttempts = step.maxAttempts;
  }
  if ('timeoutSeconds' in step) {
    if (!integerIn(step.timeoutSeconds, 1)) return undefined;
    job.timeoutSeconds = step.timeoutSeconds;
  }
  if ('allowContinuation' in step) {
    if (typeof step.allowContinuation !== 'boolean') return undefined;
    job.allowContinuation = step.allowContinuation;
  }
  return job;
}

function commonDependencies(input: unknown): ParsedDependency[] | undefined {
  if (!Array.isArray(input)) return undefined;
  const dependencies: ParsedDependency[] = [];
  for (let i = 0; i < input.length; i++) {
    const dependency = plainWithOnly(input[i], DEPENDENCY_FIELDS);
    if (dependency === undefined || !storableText(dependency.step, 200)) return undefined;
    const mode = 'mode' in dependency ? dependency.mode : 'on_success';
    if (mode !== 'on_success' && mode !== 'on_terminal') return undefined;
    dependencies.push({ step: dependency.step, mode });
  }
  return dependencies;
}

/**
 * `value` as a record when it is a plain object whose own fields (non-enumerable ones too: the schema reads
 * a field however it was defined) are all in `allowed` and none is undefined; else undefined.
 */
function plainWithOnly(value: unknown, allowed: ReadonlySet<string>): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  const record = value as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(record)) if (!allowed.has(name) || record[name] === undefined) return undefined;
  return record;
}

function storableText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max && textProblem(value) === undefined;
}

/** Storable, not blank, at most `max` UTF-16 units: the schema's `nonBlank(max)` (and `organizationId`). */
function nonBlankText(value: unknown, max: number): value is string {
  return storableText(value, max) && value.trim().length > 0;
}

/** An integer from `min` to 2^31-1: `int32` (min -2^31) and `positiveInt` (min 1). */
function integerIn(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= 2147483647;
}
