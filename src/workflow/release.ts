/**
 * Dependency release: the breadth-first cascade that follows a step becoming
 * terminal (seed `resolve_terminal_step_queue_tx`).
 *
 * For each newly terminal step, in queue order:
 *   1. read its outgoing edges; an edge belonging to another run fails closed
 *      (`workflow.internal_state`) before anything changes;
 *   2. lock the direct dependents FOR UPDATE in id order (intersecting
 *      fan-outs then take shared rows in one order), failing closed when one
 *      lies outside the run;
 *   3. one `unnest` UPDATE: pending - 1, and unsatisfied + 1 for ON_SUCCESS
 *      edges whose prerequisite did not succeed. It runs as a fresh READ
 *      COMMITTED statement after the lock wait, so it sees counters committed
 *      meanwhile;
 *   4. dependents now at pending = 0 and still BLOCKED are released when
 *      unsatisfied = 0 (job steps: their jobs inserted in one statement; all
 *      released steps updated in one statement), else canceled with
 *      `workflow.dependency_unsatisfied` in one statement and queued in turn.
 * Callers hold the run's release lock (shared), proven by `ReleaseLockHeld`.
 */
import type { Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { InternalError } from '../errors/runledger-error.js';
import { insertJobsTx, type InsertJobRow } from '../queue/enqueue.js';
import type { ReleaseLockHeld } from './locking.js';
import type { WorkflowDependencyReleaseMode, WorkflowStepRow, WorkflowStepStatus } from './rows.js';

export const DEPENDENCY_UNSATISFIED = 'workflow.dependency_unsatisfied';

export function internalState(internalMessage: string): InternalError {
  return new InternalError('workflow.internal_state', 'The workflow run is in an inconsistent state.', { internalMessage });
}

type UpdatedDependent = Pick<
  WorkflowStepRow,
  | 'id'
  | 'step_key'
  | 'execution_kind'
  | 'job_type'
  | 'organization_id'
  | 'payload'
  | 'priority'
  | 'max_attempts'
  | 'timeout_seconds'
  | 'status'
  | 'dependency_count_pending'
  | 'dependency_count_unsatisfied'
>;

export async function resolveTerminalStepQueue(
  tx: Tx,
  lock: ReleaseLockHeld,
  initialStepId: string,
  initialStatus: 'SUCCEEDED' | 'FAILED' | 'CANCELED',
): Promise<void> {
  const workflowRunId = lock.workflowRunId;
  const queue: { stepId: string; status: WorkflowStepStatus }[] = [{ stepId: initialStepId, status: initialStatus }];

  for (let head = 0; head < queue.length; head += 1) {
    const { stepId: prerequisiteId, status: prerequisiteStatus } = queue[head]!;
    const edges = await tx.$queryRaw<{ workflow_run_id: string; dependent_step_id: string; release_mode: WorkflowDependencyReleaseMode }[]>`
      SELECT workflow_run_id, dependent_step_id, release_mode
        FROM runledger.workflow_step_dependencies
       WHERE prerequisite_step_id = ${prerequisiteId}::uuid
       ORDER BY dependent_step_id`;
    if (edges.length === 0) continue;
    const foreign = edges.find((edge) => edge.workflow_run_id !== workflowRunId);
    if (foreign) {
      throw internalState(`dependency edge from step ${prerequisiteId} belongs to run ${foreign.workflow_run_id}, expected ${workflowRunId}`);
    }
    const dependentIds = edges.map((edge) => edge.dependent_step_id);
    const unsatisfied = edges.map((edge) => edge.release_mode === 'ON_SUCCESS' && prerequisiteStatus !== 'SUCCEEDED');

    const locked = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM runledger.workflow_steps
       WHERE id = ANY(${dependentIds}::uuid[]) AND workflow_run_id = ${workflowRunId}::uuid
       ORDER BY id
         FOR UPDATE`;
    if (locked.length !== dependentIds.length) {
      const lockedIds = new Set(locked.map((row) => row.id));
      const outside = dependentIds.find((id) => !lockedIds.has(id));
      throw internalState(`dependency edge from step ${prerequisiteId} references dependent ${outside} outside run ${workflowRunId}`);
    }

    const updated = await tx.$queryRaw<UpdatedDependent[]>`
      UPDATE runledger.workflow_steps AS ws
         SET dependency_count_pending = ws.dependency_count_pending - 1,
             dependency_count_unsatisfied = ws.dependency_count_unsatisfied + CASE WHEN d.unsatisfied THEN 1 ELSE 0 END,
             updated_at = now()
        FROM unnest(${dependentIds}::uuid[], ${unsatisfied}::boolean[]) AS d(step_id, unsatisfied)
       WHERE ws.id = d.step_id AND ws.workflow_run_id = ${workflowRunId}::uuid
      RETURNING ws.id, ws.step_key, ws.execution_kind, ws.job_type, ws.organization_id, ws.payload, ws.priority,
                ws.max_attempts, ws.timeout_seconds, ws.status, ws.dependency_count_pending, ws.dependency_count_unsatisfied`;
    if (updated.length !== dependentIds.length) {
      throw internalState(`counter update from step ${prerequisiteId} touched ${updated.length} of ${dependentIds.length} dependents in run ${workflowRunId}`);
    }

    const ready = updated.filter((row) => row.dependency_count_pending === 0 && row.status === 'BLOCKED').sort((a, b) => (a.id < b.id ? -1 : 1));
    const toRelease = ready.filter((row) => row.dependency_count_unsatisfied === 0);
    const toCancel = ready.filter((row) => row.dependency_count_unsatisfied > 0);
    await releaseSteps(tx, workflowRunId, toRelease);
    for (const id of await cancelUnsatisfied(tx, workflowRunId, toCancel.map((row) => row.id))) {
      queue.push({ stepId: id, status: 'CANCELED' });
    }
  }
}

/**
 * Releases BLOCKED steps whose prerequisites are all satisfied: job steps get
 * their job (all inserted by one statement) and become ENQUEUED; external
 * steps become WAITING_FOR_EXTERNAL. One UPDATE for all of them.
 */
export async function releaseSteps(
  tx: Tx,
  workflowRunId: string,
  steps: readonly Pick<UpdatedDependent, 'id' | 'step_key' | 'execution_kind' | 'job_type' | 'organization_id' | 'payload' | 'priority' | 'max_attempts' | 'timeout_seconds'>[],
): Promise<void> {
  if (steps.length === 0) return;
  const jobs: InsertJobRow[] = [];
  const jobIdByStep = new Map<string, string>();
  for (const step of steps) {
    if (step.execution_kind !== 'JOB') continue;
    if (step.job_type === null || step.payload === null) throw internalState(`job step ${step.id} has no job type or payload`);
    const jobId = newId();
    jobIdByStep.set(step.id, jobId);
    jobs.push({
      id: jobId,
      jobType: step.job_type,
      organizationId: step.organization_id,
      payload: step.payload,
      priority: step.priority ?? 0,
      maxAttempts: step.max_attempts ?? 5,
      timeoutSeconds: step.timeout_seconds ?? 300,
      nextRunAt: null,
      idempotencyKey: null,
      enqueueRequest: null,
      eventPayload: { workflowRunId, stepId: step.id, stepKey: step.step_key },
    });
  }
  const inserted = await insertJobsTx(tx, jobs);
  if (inserted.length !== jobs.length) throw internalState(`released ${jobs.length} job steps in run ${workflowRunId} but inserted ${inserted.length} jobs`);

  const stepIds = steps.map((step) => step.id);
  const jobIds = steps.map((step) => jobIdByStep.get(step.id) ?? null);
  const released = await tx.$executeRaw`
    UPDATE runledger.workflow_steps AS ws
       SET status = CASE WHEN r.job_id IS NULL THEN 'WAITING_FOR_EXTERNAL' ELSE 'ENQUEUED' END::runledger.workflow_step_status,
           job_id = r.job_id,
           released_at = now(),
           updated_at = now()
      FROM unnest(${stepIds}::uuid[], ${jobIds}::uuid[]) AS r(step_id, job_id)
     WHERE ws.id = r.step_id AND ws.workflow_run_id = ${workflowRunId}::uuid AND ws.status = 'BLOCKED'`;
  if (released !== steps.length) throw internalState(`released ${released} of ${steps.length} steps in run ${workflowRunId}`);
}

async function cancelUnsatisfied(tx: Tx, workflowRunId: string, stepIds: readonly string[]): Promise<string[]> {
  if (stepIds.length === 0) return [];
  const rows = await tx.$queryRaw<{ id: string }[]>`
    UPDATE runledger.workflow_steps
       SET status = 'CANCELED',
           finished_at = COALESCE(finished_at, now()),
           status_reason = ${DEPENDENCY_UNSATISFIED},
           last_error_code = ${DEPENDENCY_UNSATISFIED},
           last_error_message = 'Step dependency requirements were not satisfied.',
           output = NULL,
           updated_at = now()
     WHERE id = ANY(${stepIds as string[]}::uuid[]) AND workflow_run_id = ${workflowRunId}::uuid AND status = 'BLOCKED'
    RETURNING id`;
  return rows.map((row) => row.id).sort();
}
