/**
 * Rebuilding a run from what was stored when it was created: the canonical
 * enqueue snapshot (`workflow_runs.enqueue_request`) plus the canonical
 * request of every append (`workflow_mutations.request`). Both hold
 * validated steps (settings resolved), so the rebuild maps them back to a
 * `WorkflowRunInput` and validates it again with the enqueue's own rules: a
 * setting a later version adds to steps carries over as long as its name is
 * the same in the input and the snapshot, and a snapshot the rules refuse is
 * `workflow.recovery_snapshot_unsafe`, never a silently different run.
 *
 * Then the rebuild is held against the source's rows (`verifySourceRows`):
 * the same step keys, kinds, job types, payloads, settings columns, edges and
 * result step. Every path that adds steps records its request (enqueue: the
 * snapshot; append: its mutation row), so a mismatch means the rows were
 * changed some other way, and the recovery is refused rather than running
 * something the source never was.
 */
import type { Tx } from '../client/types.js';
import { ValidationError } from '../errors/runledger-error.js';
import type { JsonValue } from '../model/json.js';
import { validateWorkflowRun, type ValidatedWorkflowRun } from '../workflow/run-definition.js';
import type { WorkflowStepStatus } from '../model/workflow-rows.js';
import { snapshotUnsafe } from './errors.js';

type JsonObject = { [key: string]: JsonValue };
const isObject = (value: unknown): value is JsonObject => value !== null && typeof value === 'object' && !Array.isArray(value);

export interface RebuildSource {
  sourceRunId: string;
  workflowType: string;
  organizationId: string | null;
  metadata: JsonValue;
  snapshot: JsonValue;
  /** The requests of the run's appends, in the order they were applied. */
  appends: readonly JsonValue[];
}

/** A stored step back to its input form: `resourceKey` -> `resource`, unset settings (null) left out. */
function inputStep(
  sourceRunId: string,
  raw: JsonValue,
  dependsOn: { step: string; mode: 'on_success' | 'on_terminal' }[],
  resultStepKey: string | null,
): JsonObject {
  if (!isObject(raw) || typeof raw.key !== 'string')
    throw snapshotUnsafe(sourceRunId, `a stored step is not an object with a key: ${JSON.stringify(raw)?.slice(0, 200)}`);
  const { resourceKey, dependsOn: _stored, ...rest } = raw;
  const settings = Object.fromEntries(Object.entries(rest).filter(([name, value]) => name === 'payload' || value !== null));
  return {
    ...settings,
    ...(typeof resourceKey === 'string' ? { resource: resourceKey } : {}),
    dependsOn,
    result: raw.key === resultStepKey,
  };
}

const inputMode = (mode: JsonValue | undefined): 'on_success' | 'on_terminal' =>
  mode === 'ON_TERMINAL' || mode === 'on_terminal' ? 'on_terminal' : 'on_success';

/** The source's DAG as a validated run (no idempotency key: a recovery is identified by its request key). */
export function rebuildRun(source: RebuildSource): ValidatedWorkflowRun {
  const { sourceRunId, snapshot } = source;
  if (!isObject(snapshot) || !Array.isArray(snapshot.steps)) throw snapshotUnsafe(sourceRunId, 'the enqueue snapshot has no steps');
  const resultStepKey = typeof snapshot.resultStepKey === 'string' ? snapshot.resultStepKey : null;
  const steps: JsonObject[] = snapshot.steps.map((raw) => {
    const stored = isObject(raw) && Array.isArray(raw.dependsOn) ? raw.dependsOn : [];
    const dependsOn = stored.map((d) =>
      isObject(d) && typeof d.step === 'string' ? { step: d.step, mode: inputMode(d.mode) } : { step: '', mode: inputMode(undefined) },
    );
    return inputStep(sourceRunId, raw, dependsOn, resultStepKey);
  });
  for (const append of source.appends) {
    if (!isObject(append) || !Array.isArray(append.steps) || !Array.isArray(append.edges))
      throw snapshotUnsafe(sourceRunId, 'an append request has no steps or edges');
    const edges = append.edges.filter(isObject);
    for (const raw of append.steps) {
      const key = isObject(raw) ? raw.key : undefined;
      const dependsOn = edges
        .filter((edge) => edge.dependent === key && typeof edge.prerequisite === 'string')
        .map((edge) => ({ step: edge.prerequisite as string, mode: inputMode(edge.mode) }));
      steps.push(inputStep(sourceRunId, raw, dependsOn, resultStepKey));
    }
  }
  try {
    return validateWorkflowRun({
      workflowType: source.workflowType,
      organizationId: source.organizationId,
      metadata: isObject(source.metadata) ? source.metadata : {},
      steps,
    });
  } catch (error) {
    if (error instanceof ValidationError) throw snapshotUnsafe(sourceRunId, `the rebuilt run is invalid (${error.code} at ${error.field})`, error);
    throw error;
  }
}

export interface SourceStepState {
  status: WorkflowStepStatus;
  output: JsonValue | null;
}

/**
 * Holds the rebuild against the source's step and edge rows (module comment);
 * returns each source step's status and output, by key. Two statements.
 */
export async function verifySourceRows(
  tx: Tx,
  sourceRunId: string,
  resultStepKey: string | null,
  run: ValidatedWorkflowRun,
): Promise<Map<string, SourceStepState>> {
  const job = <T>(pick: (step: Extract<ValidatedWorkflowRun['steps'][number], { kind: 'job' }>) => T): (T | null)[] =>
    run.steps.map((step) => (step.kind === 'job' ? pick(step) : null));
  const rows = await tx.$queryRaw<{ step_key: string; status: WorkflowStepStatus | null; output: JsonValue | null; same: boolean }[]>`
    WITH rebuilt AS (
      SELECT * FROM unnest(${run.steps.map((s) => s.key)}::text[], ${run.steps.map((s) => (s.kind === 'job' ? 'JOB' : 'EXTERNAL'))}::text[],
                           ${job((s) => s.jobType)}::text[], ${job((s) => JSON.stringify(s.payload))}::jsonb[],
                           ${job((s) => s.priority)}::int[], ${job((s) => s.maxAttempts)}::int[], ${job((s) => s.timeoutSeconds)}::int[],
                           ${job((s) => s.resourceKey)}::text[], ${job((s) => s.backoff?.baseDelayMs ?? null)}::int[],
                           ${job((s) => s.backoff?.maxDelayMs ?? null)}::int[])
             AS r(step_key, kind, job_type, payload, priority, max_attempts, timeout_seconds, resource_key, backoff_base_ms, backoff_max_ms)
    ),
    source AS (
      -- A durable function's recorded steps are not in its snapshot: recover.ts forks them (function-fork.ts).
      SELECT * FROM runledger.workflow_steps WHERE workflow_run_id = ${sourceRunId}::uuid AND execution_kind <> 'FUNCTION'
    )
    SELECT COALESCE(r.step_key, s.step_key) AS step_key, s.status, s.output,
           COALESCE(r.step_key IS NOT NULL AND s.id IS NOT NULL AND r.kind = s.execution_kind::text
                    AND r.job_type IS NOT DISTINCT FROM s.job_type AND r.payload IS NOT DISTINCT FROM s.payload
                    AND r.priority IS NOT DISTINCT FROM s.priority AND r.max_attempts IS NOT DISTINCT FROM s.max_attempts
                    AND r.timeout_seconds IS NOT DISTINCT FROM s.timeout_seconds AND r.resource_key IS NOT DISTINCT FROM s.resource_key
                    AND r.backoff_base_ms IS NOT DISTINCT FROM s.backoff_base_ms AND r.backoff_max_ms IS NOT DISTINCT FROM s.backoff_max_ms,
                    false) AS same
      FROM rebuilt r FULL JOIN source s ON s.step_key = r.step_key`;
  const differing = rows.filter((row) => !row.same).map((row) => row.step_key);
  if (differing.length > 0) throw snapshotUnsafe(sourceRunId, `steps differ from the rows: ${differing.slice(0, 10).join(', ')}`);
  if (run.resultStepKey !== resultStepKey) throw snapshotUnsafe(sourceRunId, `result step ${run.resultStepKey} rebuilt, ${resultStepKey} stored`);

  const edges = run.steps.flatMap((step) => step.dependsOn.map((d) => ({ prerequisite: d.step, dependent: step.key, mode: d.mode })));
  const [edgeCheck] = await tx.$queryRaw<{ differing: number }[]>`
    WITH rebuilt AS (
      SELECT * FROM unnest(${edges.map((e) => e.prerequisite)}::text[], ${edges.map((e) => e.dependent)}::text[], ${edges.map((e) => e.mode)}::text[])
             AS r(prerequisite, dependent, mode)
    ),
    source AS (
      SELECT p.step_key AS prerequisite, d.step_key AS dependent, e.release_mode::text AS mode
        FROM runledger.workflow_step_dependencies e
        JOIN runledger.workflow_steps p ON p.id = e.prerequisite_step_id
        JOIN runledger.workflow_steps d ON d.id = e.dependent_step_id
       WHERE e.workflow_run_id = ${sourceRunId}::uuid
    )
    SELECT count(*)::int AS differing
      FROM rebuilt r FULL JOIN source s ON s.prerequisite = r.prerequisite AND s.dependent = r.dependent AND s.mode = r.mode
     WHERE r.prerequisite IS NULL OR s.prerequisite IS NULL`;
  if ((edgeCheck?.differing ?? 0) > 0) throw snapshotUnsafe(sourceRunId, `${edgeCheck!.differing} edges differ from the rows`);
  return new Map(rows.map((row) => [row.step_key, { status: row.status!, output: row.output }]));
}

/**
 * The steps a failed-only recovery carries over: a step that SUCCEEDED in the
 * source and whose prerequisites are all carried too (walked in topological
 * order). So a step runs again when it did not succeed, or when anything it
 * depends on runs again, whatever the edge's mode: its inputs may change. A
 * carried step's output is the source step's, job or external alike.
 */
export function carriedSteps(run: ValidatedWorkflowRun, source: ReadonlyMap<string, SourceStepState>): Map<string, JsonValue | null> {
  const carried = new Map<string, JsonValue | null>();
  for (const step of run.steps) {
    const state = source.get(step.key);
    if (state?.status === 'SUCCEEDED' && step.dependsOn.every((d) => carried.has(d.step))) carried.set(step.key, state.output);
  }
  return carried;
}
