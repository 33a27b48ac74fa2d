/**
 * Enqueueing a workflow run: the run row, all steps and all edges in batched
 * statements, and the roots released in the same transaction (job roots get
 * their job, ENQUEUED; external roots become WAITING_FOR_EXTERNAL).
 *
 * Step ids are issued in topological order, so a dependent's id is always
 * greater than its prerequisites' ids.
 *
 * Idempotency: with a key, the canonical request (the validated run, defaults
 * resolved) is stored; the same request again returns the existing run, a
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
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { ConflictError } from '../errors/runledger-error.js';
import { insertJobsTx, type InsertJobRow } from '../queue/enqueue.js';
import { jsonParam } from '../queue/rows.js';
import type { JsonValue } from '../validation/primitives.js';
import { validateWorkflowRun, type ValidatedWorkflowRun, type WorkflowRunInput } from './definition.js';
import type { WorkflowRunStatus } from './rows.js';

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
  const run = validateWorkflowRun(input);
  return withTransaction(db, 'enqueue workflow run', async ({ tx, owned }) => {
    if (run.idempotencyKey !== null) {
      await ensureReadCommitted({ tx, owned }, 'workflow.enqueue_idempotency_unsupported_isolation', 'Workflow enqueue with an idempotency key');
    }
    return persistRun(tx, run);
  });
}

async function persistRun(tx: Tx, run: ValidatedWorkflowRun): Promise<EnqueueWorkflowRunResult> {
  const runId = newId();
  const stepIds = run.steps.map(() => newId());
  const idByKey = new Map(run.steps.map((step, index) => [step.key, stepIds[index]!]));
  const initialStatus: WorkflowRunStatus = run.steps.every((step) => step.kind === 'external' && step.dependsOn.length === 0)
    ? 'WAITING_FOR_EXTERNAL'
    : 'RUNNING';
  const canonical = run.idempotencyKey === null ? null : canonicalRequest(run);

  const inserted = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO runledger.workflow_runs
           (id, workflow_type, organization_id, status, metadata, idempotency_key, enqueue_request, result_step_key)
    VALUES (${runId}::uuid, ${run.workflowType}, ${run.organizationId}::uuid, ${initialStatus}::runledger.workflow_run_status,
            ${jsonParam(run.metadata)}::jsonb, ${run.idempotencyKey}, ${jsonParam(canonical)}::jsonb, ${run.resultStepKey})
    ON CONFLICT (workflow_type, COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), idempotency_key)
       WHERE idempotency_key IS NOT NULL
    DO NOTHING
    RETURNING id`;
  if (inserted.length === 0) return existingRun(tx, run, canonical);

  const roots = run.steps.flatMap((step, index) => (step.dependsOn.length === 0 ? [{ step, id: stepIds[index]! }] : []));
  const jobIdByStep = new Map<string, string>();
  const jobs: InsertJobRow[] = [];
  for (const { step, id } of roots) {
    if (step.kind !== 'job') continue;
    const jobId = newId();
    jobIdByStep.set(id, jobId);
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
      eventPayload: { workflowRunId: runId, stepId: id, stepKey: step.key },
      workflowStepId: id,
    });
  }
  await insertJobsTx(tx, jobs);

  const col = <T>(pick: (step: ValidatedWorkflowRun['steps'][number], index: number) => T): T[] => run.steps.map(pick);
  await tx.$executeRaw`
    INSERT INTO runledger.workflow_steps
           (id, workflow_run_id, step_key, execution_kind, job_type, organization_id, payload, priority, max_attempts,
            timeout_seconds, status, job_id, released_at, dependency_count_total, dependency_count_pending)
    SELECT s.id, ${runId}::uuid, s.step_key, s.kind::runledger.workflow_step_execution_kind, s.job_type, ${run.organizationId}::uuid,
           s.payload, s.priority, s.max_attempts, s.timeout_seconds,
           CASE WHEN s.deps > 0 THEN 'BLOCKED' WHEN s.kind = 'EXTERNAL' THEN 'WAITING_FOR_EXTERNAL' ELSE 'ENQUEUED' END::runledger.workflow_step_status,
           s.job_id, CASE WHEN s.deps = 0 THEN now() END, s.deps, s.deps
      FROM unnest(
             ${stepIds}::uuid[],
             ${col((s) => s.key)}::text[],
             ${col((s) => (s.kind === 'job' ? 'JOB' : 'EXTERNAL'))}::text[],
             ${col((s) => (s.kind === 'job' ? s.jobType : null))}::text[],
             ${col((s) => (s.kind === 'job' ? JSON.stringify(s.payload) : null))}::jsonb[],
             ${col((s) => (s.kind === 'job' ? s.priority : null))}::int[],
             ${col((s) => (s.kind === 'job' ? s.maxAttempts : null))}::int[],
             ${col((s) => (s.kind === 'job' ? s.timeoutSeconds : null))}::int[],
             ${col((_, i) => jobIdByStep.get(stepIds[i]!) ?? null)}::uuid[],
             ${col((s) => s.dependsOn.length)}::int[]
           ) AS s(id, step_key, kind, job_type, payload, priority, max_attempts, timeout_seconds, job_id, deps)`;

  const edges = run.steps.flatMap((step) => step.dependsOn.map((d) => ({ prerequisite: idByKey.get(d.step)!, dependent: idByKey.get(step.key)!, mode: d.mode })));
  if (edges.length > 0) {
    await tx.$executeRaw`
      INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
      SELECT e.prerequisite, e.dependent, ${runId}::uuid, e.mode::runledger.workflow_dependency_release_mode
        FROM unnest(${edges.map((e) => e.prerequisite)}::uuid[], ${edges.map((e) => e.dependent)}::uuid[], ${edges.map((e) => e.mode)}::text[])
             AS e(prerequisite, dependent, mode)`;
  }
  return { workflowRunId: runId, status: initialStatus, disposition: 'inserted' };
}

/** The key was taken (possibly by a concurrent request that just committed): same request, or conflict. */
async function existingRun(tx: Tx, run: ValidatedWorkflowRun, canonical: JsonValue | null): Promise<EnqueueWorkflowRunResult> {
  // Both snapshots, the stored one and this request's, go through the same normalisation (module comment).
  // COLLATE "C": a fixed order whatever the database's collation; any fixed order will do, as both sides use it.
  const rows = await tx.$queryRaw<{ id: string; status: WorkflowRunStatus; same: boolean | null }[]>`
    WITH sides AS (
      SELECT wr.id, wr.status, side.stored, side.request
        FROM runledger.workflow_runs wr
       CROSS JOIN LATERAL (VALUES (true, wr.enqueue_request), (false, ${jsonParam(canonical)}::jsonb)) AS side(stored, request)
       WHERE wr.workflow_type = ${run.workflowType}
         AND wr.organization_id IS NOT DISTINCT FROM ${run.organizationId}::uuid
         AND wr.idempotency_key = ${run.idempotencyKey}
    ),
    normalised AS (
      SELECT id, status, stored,
             jsonb_set(request, '{steps}', (
               SELECT COALESCE(jsonb_agg(
                        jsonb_set(s.step, '{dependsOn}', (
                          SELECT COALESCE(jsonb_agg(d.dep ORDER BY d.dep->>'step' COLLATE "C"), '[]'::jsonb)
                            FROM jsonb_array_elements(COALESCE(s.step->'dependsOn', '[]'::jsonb)) AS d(dep)))
                        ORDER BY s.step->>'key' COLLATE "C"), '[]'::jsonb)
                 FROM jsonb_array_elements(COALESCE(request->'steps', '[]'::jsonb)) AS s(step))) AS request
        FROM sides
    )
    SELECT s.id, s.status, s.request = g.request AS same
      FROM normalised s
      JOIN normalised g ON g.id = s.id AND NOT g.stored
     WHERE s.stored`;
  const existing = rows[0];
  if (!existing) {
    // Only possible if the conflicting row was deleted between our two statements.
    throw new ConflictError('workflow.idempotency_conflict', 'The idempotency key is being reused concurrently; retry.', {
      internalMessage: `workflow run of type ${run.workflowType}: idempotency key conflict on insert, no row on read`,
      sensitiveDetails: { idempotencyKey: run.idempotencyKey },
    });
  }
  if (existing.same !== true) {
    throw new ConflictError('workflow.idempotency_conflict', 'The idempotency key was already used for a different workflow run request.', {
      details: { workflowRunId: existing.id },
      sensitiveDetails: { idempotencyKey: run.idempotencyKey },
    });
  }
  return { workflowRunId: existing.id, status: existing.status, disposition: 'existing' };
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
      .map((step) => ({
        ...step,
        dependsOn: step.dependsOn.map((d) => ({ step: d.step, mode: d.mode })).sort((a, b) => byKey(a.step, b.step)),
      })),
  };
}
