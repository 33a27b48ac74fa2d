/**
 * Enqueueing a workflow run: the run row, all steps and all edges in batched
 * statements, and the roots released in the same transaction (job roots get
 * their job, ENQUEUED; external roots become WAITING_FOR_EXTERNAL).
 *
 * Step ids are issued in topological order, so a dependent's id is always
 * greater than its prerequisites' ids.
 *
 * Every run stores its canonical request (the validated run, defaults
 * resolved) in `enqueue_request`, in the insert it is written by: it is what
 * a recovery rebuilds the run from (src/recovery/). Idempotency: with a key,
 * the same request again returns the existing run, a
 * different one is `workflow.idempotency_conflict`. "The same" is equality
 * of the snapshots as jsonb, the rule the job queue's `enqueue_request` uses
 * (object key order and number spelling do not matter: 1 = 1.0 = 1e0), with
 * steps and each step's dependency list treated as sets: sorted by key on
 * both sides before comparing (`existingRun`). The sort happens in SQL on the
 * stored snapshot too, so runs stored before snapshots were sorted (steps in
 * the topological order of the original input) keep matching the same DAG.
 * New snapshots are stored sorted as well, for whoever reads them. Keys are scoped by
 * (workflow type, organization). Like a keyed job enqueue (src/queue/enqueue.ts)
 * it needs READ COMMITTED to see a concurrent winner of the key, so a joined
 * transaction at a stronger level is refused
 * (`workflow.enqueue_idempotency_unsupported_isolation`) before any write.
 */
import { captureTraceContext } from '../telemetry/trace-context.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { ConflictError, ValidationError } from '../errors/runledger-error.js';
import { insertJobsTx, type InsertJobRow } from '../queue/insert-jobs.js';
import { jsonParam } from '../model/job-rows.js';
import type { JsonValue } from '../model/json.js';
import { WORKFLOW_INVALID_INPUT, validateWorkflowRun, type ValidatedWorkflowRun, type WorkflowRunInput } from './run-definition.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import { applyCatalogJson, inheritedJobTypes, type CatalogJson } from './catalog-defaults.js';

export interface EnqueueWorkflowRunResult {
  workflowRunId: string;
  status: WorkflowRunStatus;
  disposition: 'inserted' | 'existing';
}

/**
 * Validates and persists a run, releasing its roots. `db` is a Prisma client
 * (own transaction) or your interactive transaction (joined: the run exists
 * only if your transaction commits).
 *
 * @example
 * const { workflowRunId } = await enqueueWorkflowRun(prisma, workflow('onboarding').job('a', 'x.a', {}).build());
 */
export async function enqueueWorkflowRun(db: Db, input: WorkflowRunInput): Promise<EnqueueWorkflowRunResult> {
  const [result] = await enqueueWorkflowRuns(db, [input]);
  return result!;
}

/** Most runs one `enqueueWorkflowRuns` call takes (its statements carry every step and edge as arrays). */
export const MAX_WORKFLOW_RUN_BATCH = 1_000;

/**
 * Validates and persists several runs in a constant number of statements,
 * whatever their number: the runs, the root jobs, the steps and the edges,
 * one statement each (plus one when some idempotency keys already exist).
 * Results are in input order. All or nothing: an invalid run (its field named
 * `<index>.<field>`) or an idempotency conflict leaves nothing of the batch
 * (an owned transaction rolls back; in a joined one the batch's own runs are
 * deleted before the error propagates, so the caller may catch it and
 * commit).
 *
 * @example
 * await enqueueWorkflowRuns(prisma, orders.map((order) => fulfilment(order).build()));
 */
export async function enqueueWorkflowRuns(db: Db, inputs: readonly WorkflowRunInput[]): Promise<EnqueueWorkflowRunResult[]> {
  if (!Array.isArray(inputs)) throw new ValidationError(WORKFLOW_INVALID_INPUT, 'runs', 'Expected an array of workflow runs.');
  if (inputs.length > MAX_WORKFLOW_RUN_BATCH) {
    throw new ValidationError(WORKFLOW_INVALID_INPUT, 'runs', `At most ${MAX_WORKFLOW_RUN_BATCH} workflow runs per call.`);
  }
  // Array.from, not map: map skips the holes of a sparse array, which would reach the INSERT as nulls.
  const runs = Array.from(inputs, (input, index) => {
    try {
      return validateWorkflowRun(input);
    } catch (error) {
      if (inputs.length > 1 && error instanceof ValidationError) {
        throw new ValidationError(error.code, `${index}.${error.field}`, error.message, { cause: error });
      }
      throw error;
    }
  });
  if (runs.length === 0) return [];
  return withTransaction(db, runs.length === 1 ? 'enqueue workflow run' : 'enqueue workflow runs', async (context) => {
    if (runs.some((run) => run.idempotencyKey !== null)) {
      await ensureReadCommitted(context, 'workflow.enqueue_idempotency_unsupported_isolation', 'Workflow enqueue with an idempotency key');
    }
    return persistRuns(context.tx, runs, context.owned);
  });
}

interface PlannedRun {
  run: ValidatedWorkflowRun;
  runId: string;
  stepIds: string[];
  status: WorkflowRunStatus;
  canonical: JsonValue;
  carried: CarriedSteps;
}

/**
 * Steps a failed-only recovery carries over from its source (src/recovery/):
 * step key -> the output it succeeded with. Such a step is inserted SUCCEEDED
 * (no job), and its edges count as settled from the start. Empty for every
 * enqueue.
 */
export type CarriedSteps = ReadonlyMap<string, JsonValue | null>;
const NOTHING_CARRIED: CarriedSteps = new Map();
/** The statusReason of a step a recovery carried over. */
export const RECOVERY_CARRIED = 'workflow.recovery_carried';

/** Edges into `step` from steps that are not carried: the step waits for these. */
function pendingOf(step: ValidatedWorkflowRun['steps'][number], carried: CarriedSteps): number {
  return carried.size === 0 ? step.dependsOn.length : step.dependsOn.filter((d) => !carried.has(d.step)).length;
}

export async function persistRuns(
  tx: Tx,
  runs: readonly ValidatedWorkflowRun[],
  owned: boolean,
  carriedByRun: readonly CarriedSteps[] = [],
): Promise<EnqueueWorkflowRunResult[]> {
  const planned: PlannedRun[] = runs.map((run, index) => {
    const carried = carriedByRun[index] ?? NOTHING_CARRIED;
    const live = run.steps.filter((step) => !carried.has(step.key));
    return {
      run,
      runId: newId(),
      stepIds: run.steps.map(() => newId()),
      status: live.every((step) => step.kind === 'external' && pendingOf(step, carried) === 0) ? 'WAITING_FOR_EXTERNAL' : 'RUNNING',
      canonical: canonicalRequest(run),
      carried,
    };
  });

  // The caller's trace, continued by the spans of every step's job (src/telemetry/).
  const traceContext = jsonParam(await captureTraceContext());
  // Statement 1: every run; a key that exists already (or twice in this batch) is skipped. It also reads the catalog
  // defaults of the job types whose steps leave settings out (an uncorrelated subquery: evaluated once).
  const inherited = [...new Set(runs.flatMap((run) => inheritedJobTypes(run.steps)))];
  const inserted = await tx.$queryRaw<{ id: string; catalog: CatalogJson }[]>`
    INSERT INTO runledger.workflow_runs
           (id, workflow_type, organization_id, status, metadata, idempotency_key, enqueue_request, result_step_key,
            trace_context)
    SELECT r.id, r.workflow_type, r.organization_id, r.status::runledger.workflow_run_status, r.metadata, r.idempotency_key,
           r.enqueue_request, r.result_step_key, ${traceContext}::jsonb
      FROM unnest(${planned.map((p) => p.runId)}::uuid[], ${planned.map((p) => p.run.workflowType)}::text[],
                  ${planned.map((p) => p.run.organizationId)}::text[], ${planned.map((p) => p.status)}::text[],
                  ${planned.map((p) => jsonParam(p.run.metadata))}::jsonb[], ${planned.map((p) => p.run.idempotencyKey)}::text[],
                  ${planned.map((p) => jsonParam(p.canonical))}::jsonb[], ${planned.map((p) => p.run.resultStepKey)}::text[])
           WITH ORDINALITY AS r(id, workflow_type, organization_id, status, metadata, idempotency_key, enqueue_request, result_step_key, ord)
     ORDER BY r.ord
    ON CONFLICT (workflow_type, COALESCE(organization_id, ''), idempotency_key)
       WHERE idempotency_key IS NOT NULL
    DO NOTHING
    RETURNING id,
              (SELECT COALESCE(jsonb_object_agg(d.job_type, jsonb_build_array(d.default_priority, d.default_max_attempts,
                                                                              d.default_timeout_seconds)), '{}'::jsonb)
                 FROM runledger.job_definitions d WHERE d.job_type = ANY(${inherited}::text[])) AS catalog`;
  const insertedIds = new Set(inserted.map((row) => row.id));
  const catalog = inserted[0]?.catalog ?? {};
  // The steps' stored settings take the catalog's defaults; the idempotency snapshot (`canonical`) stays the request as given.
  const fresh = planned.filter((p) => insertedIds.has(p.runId)).map((p) => ({ ...p, run: { ...p.run, steps: applyCatalogJson(p.run.steps, catalog) } }));
  const skipped = planned.filter((p) => !insertedIds.has(p.runId));

  // Statement 2 (only when keys were taken): same request -> the existing run, else a conflict.
  const existing = skipped.length === 0 ? new Map<PlannedRun, ExistingRun>() : await existingRuns(tx, skipped);
  const conflict = skipped.find((p) => existing.get(p)?.same !== true);
  if (conflict) {
    if (!owned && fresh.length > 0) {
      // A joined transaction may catch the error and commit: keep nothing of this batch.
      await tx.$executeRaw`DELETE FROM runledger.workflow_runs WHERE id = ANY(${fresh.map((p) => p.runId)}::uuid[])`;
    }
    throw idempotencyConflict(conflict, existing.get(conflict));
  }

  if (fresh.length > 0) await insertStepsAndEdges(tx, fresh);
  return planned.map((p): EnqueueWorkflowRunResult => {
    const found = existing.get(p);
    return found
      ? { workflowRunId: found.id, status: found.status, disposition: 'existing' }
      : { workflowRunId: p.runId, status: p.status, disposition: 'inserted' };
  });
}

/** Statements 3-5: the root jobs, every step, every edge of the new runs. */
async function insertStepsAndEdges(tx: Tx, fresh: readonly PlannedRun[]): Promise<void> {
  const jobs: InsertJobRow[] = [];
  const jobIdByStep = new Map<string, string>();
  for (const { run, stepIds, carried } of fresh) {
    run.steps.forEach((step, index) => {
      if (step.kind !== 'job' || carried.has(step.key) || pendingOf(step, carried) > 0) return;
      const stepId = stepIds[index]!;
      const jobId = newId();
      jobIdByStep.set(stepId, jobId);
      jobs.push({
        id: jobId,
        jobType: step.jobType,
        organizationId: run.organizationId,
        payload: step.payload,
        priority: step.priority,
        maxAttempts: step.maxAttempts,
        timeoutSeconds: step.timeoutSeconds,
        nextRunAt: null,
        idempotencyKey: null,
        enqueueRequest: null,
        // The ENQUEUED event's {workflowRunId, stepId, stepKey} is derived from the step (the job_trail view).
        eventPayload: null,
        workflowStepId: stepId,
        resourceKey: step.resourceKey,
        backoff: step.backoff,
        stage: step.stage,
      });
    });
  }
  await insertJobsTx(tx, jobs);

  const steps = fresh.flatMap(({ run, runId, stepIds, carried }) =>
    run.steps.map((step, index) => ({
      step,
      run,
      runId,
      id: stepIds[index]!,
      carried: carried.has(step.key),
      output: carried.get(step.key) ?? null,
      pending: pendingOf(step, carried),
    })),
  );
  const col = <T>(pick: (entry: (typeof steps)[number]) => T): T[] => steps.map(pick);
  await tx.$executeRaw`
    INSERT INTO runledger.workflow_steps
           (id, workflow_run_id, step_key, execution_kind, job_type, organization_id, payload, priority, max_attempts,
            timeout_seconds, resource_key, backoff_base_ms, backoff_max_ms, stage, allow_continuation, status, job_id, released_at,
            dependency_count_total, dependency_count_pending, output, finished_at, status_reason)
    SELECT s.id, s.run_id, s.step_key, s.kind::runledger.workflow_step_execution_kind, s.job_type, s.organization_id,
           s.payload, s.priority, s.max_attempts, s.timeout_seconds, s.resource_key, s.backoff_base_ms, s.backoff_max_ms,
           s.stage, s.allow_continuation,
           CASE WHEN s.carried THEN 'SUCCEEDED' WHEN s.pending > 0 THEN 'BLOCKED' WHEN s.kind = 'EXTERNAL' THEN 'WAITING_FOR_EXTERNAL'
                ELSE 'ENQUEUED' END::runledger.workflow_step_status,
           s.job_id, CASE WHEN s.pending = 0 THEN now() END, s.deps, s.pending,
           CASE WHEN s.carried THEN s.output END, CASE WHEN s.carried THEN now() END, CASE WHEN s.carried THEN ${RECOVERY_CARRIED} END
      FROM unnest(
             ${col((e) => e.id)}::uuid[],
             ${col((e) => e.runId)}::uuid[],
             ${col((e) => e.run.organizationId)}::text[],
             ${col((e) => e.step.key)}::text[],
             ${col((e) => (e.step.kind === 'job' ? 'JOB' : 'EXTERNAL'))}::text[],
             ${col((e) => (e.step.kind === 'job' ? e.step.jobType : null))}::text[],
             ${col((e) => (e.step.kind === 'job' ? JSON.stringify(e.step.payload) : null))}::jsonb[],
             ${col((e) => (e.step.kind === 'job' ? e.step.priority : null))}::int[],
             ${col((e) => (e.step.kind === 'job' ? e.step.maxAttempts : null))}::int[],
             ${col((e) => (e.step.kind === 'job' ? e.step.timeoutSeconds : null))}::int[],
             ${col((e) => (e.step.kind === 'job' ? e.step.resourceKey : null))}::text[],
             ${col((e) => (e.step.kind === 'job' ? (e.step.backoff?.baseDelayMs ?? null) : null))}::int[],
             ${col((e) => (e.step.kind === 'job' ? (e.step.backoff?.maxDelayMs ?? null) : null))}::int[],
             ${col((e) => jobIdByStep.get(e.id) ?? null)}::uuid[],
             ${col((e) => e.step.dependsOn.length)}::int[],
             ${col((e) => e.pending)}::int[],
             ${col((e) => e.carried)}::boolean[],
             ${col((e) => (e.carried ? jsonParam(e.output) : null))}::jsonb[],
             ${col((e) => (e.step.kind === 'job' ? e.step.stage : null))}::text[],
             ${col((e) => e.step.kind === 'job' && e.step.allowContinuation)}::boolean[]
           ) AS s(id, run_id, organization_id, step_key, kind, job_type, payload, priority, max_attempts, timeout_seconds,
                  resource_key, backoff_base_ms, backoff_max_ms, job_id, deps, pending, carried, output, stage, allow_continuation)`;

  const edges = fresh.flatMap(({ run, runId, stepIds }) => {
    const idByKey = new Map(run.steps.map((step, index) => [step.key, stepIds[index]!]));
    return run.steps.flatMap((step) =>
      step.dependsOn.map((d) => ({ runId, prerequisite: idByKey.get(d.step)!, dependent: idByKey.get(step.key)!, mode: d.mode })),
    );
  });
  if (edges.length > 0) {
    await tx.$executeRaw`
      INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
      SELECT e.prerequisite, e.dependent, e.run_id, e.mode::runledger.workflow_dependency_release_mode
        FROM unnest(${edges.map((e) => e.prerequisite)}::uuid[], ${edges.map((e) => e.dependent)}::uuid[],
                    ${edges.map((e) => e.runId)}::uuid[], ${edges.map((e) => e.mode)}::text[])
             AS e(prerequisite, dependent, run_id, mode)`;
  }
}

/**
 * The keys were taken (possibly by concurrent requests that just committed,
 * or earlier in this batch): for each, the existing run when its request is
 * the same, absent when it differs. One statement for all of them; both
 * snapshots, the stored one and the request's, go through the same
 * normalisation (module comment). COLLATE "C": a fixed order whatever the
 * database's collation; any fixed order will do, as both sides use it.
 */
interface ExistingRun {
  id: string;
  status: WorkflowRunStatus;
  same: boolean;
}

async function existingRuns(tx: Tx, skipped: readonly PlannedRun[]): Promise<Map<PlannedRun, ExistingRun>> {
  const rows = await tx.$queryRaw<{ ord: number; id: string; status: WorkflowRunStatus; same: boolean | null }[]>`
    WITH asked AS (
      SELECT * FROM unnest(${skipped.map((p) => p.run.workflowType)}::text[], ${skipped.map((p) => p.run.organizationId)}::text[],
                           ${skipped.map((p) => p.run.idempotencyKey)}::text[], ${skipped.map((p) => jsonParam(p.canonical))}::jsonb[])
             WITH ORDINALITY AS a(workflow_type, organization_id, idempotency_key, request, ord)
    ),
    sides AS (
      SELECT a.ord, wr.id, wr.status, side.stored, side.request
        FROM asked a
        JOIN runledger.workflow_runs wr
          ON wr.workflow_type = a.workflow_type
         AND wr.organization_id IS NOT DISTINCT FROM a.organization_id
         AND wr.idempotency_key = a.idempotency_key
       CROSS JOIN LATERAL (VALUES (true, wr.enqueue_request), (false, a.request)) AS side(stored, request)
    ),
    normalised AS (
      SELECT ord, id, status, stored,
             jsonb_set(request, '{steps}', (
               SELECT COALESCE(jsonb_agg(
                        jsonb_set(s.step, '{dependsOn}', (
                          SELECT COALESCE(jsonb_agg(d.dep ORDER BY d.dep->>'step' COLLATE "C"), '[]'::jsonb)
                            FROM jsonb_array_elements(COALESCE(s.step->'dependsOn', '[]'::jsonb)) AS d(dep)))
                        ORDER BY s.step->>'key' COLLATE "C"), '[]'::jsonb)
                 FROM jsonb_array_elements(COALESCE(request->'steps', '[]'::jsonb)) AS s(step))) AS request
        FROM sides
    )
    SELECT s.ord::int AS ord, s.id, s.status, s.request = g.request AS same
      FROM normalised s
      JOIN normalised g ON g.ord = s.ord AND NOT g.stored
     WHERE s.stored`;
  return new Map(rows.map((row) => [skipped[row.ord - 1]!, { id: row.id, status: row.status, same: row.same === true }]));
}

function idempotencyConflict(p: PlannedRun, existing: ExistingRun | undefined): ConflictError {
  if (!existing) {
    // Only possible if the conflicting row was deleted between our two statements.
    return new ConflictError('workflow.idempotency_conflict', 'The idempotency key is being reused concurrently; retry.', {
      internalMessage: `workflow run of type ${p.run.workflowType}: idempotency key conflict on insert, no row on read`,
      sensitiveDetails: { idempotencyKey: p.run.idempotencyKey },
    });
  }
  return new ConflictError('workflow.idempotency_conflict', 'The idempotency key was already used for a different workflow run request.', {
    details: { workflowRunId: existing.id },
    sensitiveDetails: { idempotencyKey: p.run.idempotencyKey },
  });
}

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The stored snapshot: the validated run with steps sorted by key and each
 * dependency list by prerequisite key (compared as sets, see the module
 * comment); jsonb takes care of object key order and number spelling.
 */
function canonicalRequest(run: ValidatedWorkflowRun): JsonValue {
  return {
    workflowType: run.workflowType,
    organizationId: run.organizationId,
    metadata: run.metadata,
    resultStepKey: run.resultStepKey,
    steps: [...run.steps]
      .sort((a, b) => byKey(a.key, b.key))
      .map((step) => {
        // A null resource key, backoff or stage, and a continuation not allowed, are left out, so snapshots stored before they existed still compare equal.
        // `inherits` is left out: the snapshot is the request as given, whatever the catalog says at the time.
        const {
          resourceKey,
          backoff,
          stage,
          allowContinuation,
          inherits: _inherits,
          ...rest
        } = step.kind === 'job' ? step : { ...step, resourceKey: null, backoff: null, stage: null, allowContinuation: false, inherits: undefined };
        return {
          ...rest,
          ...(allowContinuation ? { allowContinuation } : {}),
          ...(resourceKey === null ? {} : { resourceKey }),
          ...(stage === null ? {} : { stage }),
          ...(backoff === null ? {} : { backoff: { baseDelayMs: backoff.baseDelayMs, maxDelayMs: backoff.maxDelayMs } }),
          dependsOn: step.dependsOn.map((d) => ({ step: d.step, mode: d.mode })).sort((a, b) => byKey(a.step, b.step)),
        };
      }),
  };
}
