/**
 * Enqueueing a workflow run: the run row, all steps, all edges and the roots
 * released (job roots get their job, ENQUEUED; external roots become
 * WAITING_FOR_EXTERNAL) in one statement, whatever the number of runs; a
 * second only when an idempotency key was taken. Validation and the DAG check
 * are TypeScript (run-definition.ts), done before any statement. A single run
 * (or a batch without keys) on a root client autocommits that one statement:
 * starting a run costs the round trips of enqueueing a job. No lock is shared
 * between runs: the only waits are a concurrent insert of the same key.
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
import { z } from 'zod';
import { parseInput } from '../validation/parse.js';
import { captureTraceContext } from '../telemetry/trace-context.js';
import { ensureReadCommitted, withStatement, withTransaction } from '../client/transaction.js';
import { isTransactionClient, type Db, type Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { ConflictError, ValidationError } from '../errors/runledger-error.js';
import { jsonParam } from '../model/job-rows.js';
import type { JsonValue } from '../model/json.js';
import { WORKFLOW_INVALID_INPUT, validateWorkflowRun, type ValidatedWorkflowRun, type WorkflowRunInput } from './run-definition.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import { asTemplate } from '../db/sql-template.js';
import { startWorkflowRunsStatement } from '../queue/statements/start-workflow-runs.js';
import { writeConcurrencyLimitsStatement } from '../queue/statements/concurrency-limits.js';
import { writeRateLimitsStatement } from '../queue/statements/rate-limits.js';

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
export async function enqueueWorkflowRun(db: Db, input: WorkflowRunInput, options?: EnqueueWorkflowOptions): Promise<EnqueueWorkflowRunResult> {
  const [result] = await enqueueWorkflowRuns(db, [input], options);
  return result!;
}

/**
 * Options of one `enqueueWorkflowRun(s)` call. `notify` (default true): false sends no wake-up NOTIFY for the
 * root jobs (workers find them by polling): for bulk starts, or many concurrent callers, whose NOTIFYs queue
 * on one lock at commit.
 */
export const enqueueWorkflowOptionsSchema = z.strictObject({ notify: z.boolean().optional() });
export type EnqueueWorkflowOptions = z.input<typeof enqueueWorkflowOptionsSchema>;

/** Most runs one `enqueueWorkflowRuns` call takes (its statement carries every step and edge as jsonb). */
export const MAX_WORKFLOW_RUN_BATCH = 1_000;

/**
 * Validates and persists several runs in one statement, whatever their
 * number: the runs, the root jobs, the steps and the edges (plus one
 * statement when some idempotency keys already exist).
 * Results are in input order. All or nothing: an invalid run (its field named
 * `<index>.<field>`) or an idempotency conflict leaves nothing of the batch
 * (an owned transaction rolls back; in a joined one the batch's own runs are
 * deleted before the error propagates, so the caller may catch it and
 * commit).
 *
 * @example
 * await enqueueWorkflowRuns(prisma, orders.map((order) => fulfilment(order).build()));
 */
export async function enqueueWorkflowRuns(db: Db, inputs: readonly WorkflowRunInput[], options?: EnqueueWorkflowOptions): Promise<EnqueueWorkflowRunResult[]> {
  const { notify = true } = options === undefined ? {} : parseInput(enqueueWorkflowOptionsSchema, options, WORKFLOW_INVALID_INPUT, 'options');
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
  const operation = runs.length === 1 ? 'enqueue workflow run' : 'enqueue workflow runs';
  const keyed = runs.some((run) => run.idempotencyKey !== null);
  if (!isTransactionClient(db) && (runs.length === 1 || !keyed)) {
    // One statement writes it all (persistRuns), so on a root client it autocommits: one round trip, no
    // BEGIN / COMMIT. Safe where nothing can need undoing: one run (a taken key inserts nothing; the read of
    // the existing run that follows needs no transaction) or no keys at all (nothing is skipped). A keyed
    // insert needs READ COMMITTED (module comment): withStatement opens an owned transaction where the
    // session's default is stronger.
    return withStatement(db, operation, (client) => persistRuns(client, runs, true, [], notify), { readCommitted: keyed });
  }
  return withTransaction(db, operation, async (context) => {
    if (keyed) {
      await ensureReadCommitted(context, 'workflow.enqueue_idempotency_unsupported_isolation', 'Workflow enqueue with an idempotency key');
    }
    return persistRuns(context.tx, runs, context.owned, [], notify);
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

/**
 * Writes the validated runs (statement 1) and resolves taken keys (statement 2, only then). `tx` is a
 * transaction, or a root client when the write autocommits (enqueueWorkflowRuns: then nothing can need
 * undoing). `owned` false: the caller may catch a conflict and commit, so this batch's runs are deleted first.
 */
export async function persistRuns(
  tx: Tx,
  runs: readonly ValidatedWorkflowRun[],
  owned: boolean,
  carriedByRun: readonly CarriedSteps[] = [],
  notify = true,
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
  // A joined transaction's keyed batch may still be refused below, and must then leave nothing: its keys'
  // limit rows are written once it cannot be.
  const deferLimits = !owned && runs.some((run) => run.idempotencyKey !== null);
  const inserted = await insertRunsStatement(tx, planned, traceContext, notify, !deferLimits);
  const insertedIds = new Set(inserted.map((row) => row.id));
  const fresh = planned.filter((p) => insertedIds.has(p.runId));
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
  if (deferLimits) {
    const limits = fresh.flatMap((p) => p.run.steps.flatMap((step) => (step.kind === 'job' && step.concurrency !== null ? [step.concurrency] : [])));
    if (limits.length > 0) await tx.$queryRaw(...asTemplate(writeConcurrencyLimitsStatement([...new Map(limits.map((l) => [l.key, l])).values()])));
    const rates = fresh.flatMap((p) => p.run.steps.flatMap((step) => (step.kind === 'job' && step.rateLimit !== null ? [step.rateLimit] : [])));
    if (rates.length > 0) await tx.$queryRaw(...asTemplate(writeRateLimitsStatement([...new Map(rates.map((r) => [r.key, r])).values()])));
  }
  return planned.map((p): EnqueueWorkflowRunResult => {
    const found = existing.get(p);
    return found
      ? { workflowRunId: found.id, status: found.status, disposition: 'existing' }
      : { workflowRunId: p.runId, status: p.status, disposition: 'inserted' };
  });
}

/** Statement 1, the whole enqueue (src/queue/statements/start-workflow-runs.ts): its three jsonb batches. */
async function insertRunsStatement(
  tx: Tx,
  planned: readonly PlannedRun[],
  traceContext: string | null,
  notify: boolean,
  writeLimits: boolean,
): Promise<{ id: string }[]> {
  const runs: Record<string, unknown>[] = [];
  const steps: Record<string, unknown>[] = [];
  const edges: Record<string, unknown>[] = [];
  planned.forEach(({ run, runId, stepIds, status, canonical, carried }, ord) => {
    runs.push(
      compact({
        id: runId,
        workflow_type: run.workflowType,
        organization_id: run.organizationId,
        status,
        metadata: run.metadata,
        idempotency_key: run.idempotencyKey,
        enqueue_request: canonical,
        result_step_key: run.resultStepKey,
        ord,
      }),
    );
    const idByKey = new Map(run.steps.map((step, index) => [step.key, stepIds[index]!]));
    run.steps.forEach((step, index) => {
      const id = stepIds[index]!;
      const pending = pendingOf(step, carried);
      const isCarried = carried.has(step.key);
      const job = step.kind === 'job';
      steps.push(
        compact({
          id,
          run_id: runId,
          organization_id: run.organizationId,
          step_key: step.key,
          kind: job ? 'JOB' : 'EXTERNAL',
          ord: steps.length,
          deps: step.dependsOn.length,
          pending,
          // A carried output of null is stored as SQL NULL (an external step's, say), as the source has it.
          ...(isCarried ? { carried: true, output: carried.get(step.key) ?? null } : {}),
          ...(job
            ? {
                job_type: step.jobType,
                payload: { v: step.payload },
                priority: step.priority,
                max_attempts: step.maxAttempts,
                timeout_seconds: step.timeoutSeconds,
                resource_key: step.resourceKey,
                concurrency_key: step.concurrency?.key,
                concurrency_limit: step.concurrency?.limit,
                rate_key: step.rateLimit?.key,
                rate_limit: step.rateLimit?.limit,
                rate_period_ms: step.rateLimit?.periodMs,
                rate_burst: step.rateLimit?.burst,
                fair_key: step.fairness?.key,
                fair_weight: step.fairness?.weight,
                backoff_base_ms: step.backoff?.baseDelayMs,
                backoff_max_ms: step.backoff?.maxDelayMs,
                stage: step.stage,
                allow_continuation: step.allowContinuation,
                // A root job step gets its job now (ENQUEUED); the job_trail view derives its ENQUEUED event.
                job_id: !isCarried && pending === 0 ? newId() : null,
                inherits: step.inherits !== undefined && step.inherits.length > 0 ? step.inherits : null,
              }
            : {}),
        }),
      );
      for (const d of step.dependsOn) edges.push({ run_id: runId, prerequisite: idByKey.get(d.step)!, dependent: id, mode: d.mode });
    });
  });
  return tx.$queryRaw<{ id: string }[]>(
    ...asTemplate(
      startWorkflowRunsStatement(
        JSON.stringify(runs),
        JSON.stringify(steps),
        JSON.stringify(edges),
        traceContext,
        RECOVERY_CARRIED,
        writeLimits && steps.some((s) => s.concurrency_key !== undefined),
        writeLimits && steps.some((s) => s.rate_key !== undefined),
        notify,
      ),
    ),
  );
}

/**
 * `entry` without its null and undefined fields: jsonb_to_recordset reads a missing key as SQL NULL. Copied,
 * not deleted in place: `delete` turns an object into a dictionary, which JSON.stringify walks slowly.
 */
function compact(entry: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key in entry) {
    const value = entry[key];
    if (value !== null && value !== undefined) kept[key] = value;
  }
  return kept;
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
        // A null resource key, concurrency, rate limit, fairness, backoff or stage, and a continuation not allowed, are left out, so snapshots stored before they existed still compare equal.
        // `inherits` is left out: the snapshot is the request as given, whatever the catalog says at the time.
        const {
          resourceKey,
          concurrency,
          rateLimit,
          fairness,
          backoff,
          stage,
          allowContinuation,
          inherits: _inherits,
          ...rest
        } = step.kind === 'job'
          ? step
          : {
              ...step,
              resourceKey: null,
              concurrency: null,
              rateLimit: null,
              fairness: null,
              backoff: null,
              stage: null,
              allowContinuation: false,
              inherits: undefined,
            };
        return {
          ...rest,
          ...(allowContinuation ? { allowContinuation } : {}),
          ...(resourceKey === null ? {} : { resourceKey }),
          ...(concurrency === null ? {} : { concurrency: { key: concurrency.key, limit: concurrency.limit } }),
          ...(rateLimit === null ? {} : { rateLimit: { key: rateLimit.key, limit: rateLimit.limit, periodMs: rateLimit.periodMs, burst: rateLimit.burst } }),
          ...(fairness === null ? {} : { fairness: { key: fairness.key, weight: fairness.weight } }),
          ...(stage === null ? {} : { stage }),
          ...(backoff === null ? {} : { backoff: { baseDelayMs: backoff.baseDelayMs, maxDelayMs: backoff.maxDelayMs } }),
          dependsOn: step.dependsOn.map((d) => ({ step: d.step, mode: d.mode })).sort((a, b) => byKey(a.step, b.step)),
        };
      }),
  };
}
