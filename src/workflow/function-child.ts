/**
 * A durable function's child run (`ctx.invoke`, docs/concepts/durable-functions.md, "Child runs"):
 *
 * - `startChildRun`: one transaction under the attempt's lease: the body's job row (rung 1, fenced:
 *   function-wait-statements.ts's `lockBody`), then only new rows: the child run (enqueued as any run, in
 *   the parent's organization, with the key `runledger:<parent run>:<step key>`), its `parent_job_id`, and
 *   the `$child:<name>` FUNCTION step row recording the child's id. So a re-execution finds the child
 *   recorded and never starts a second one.
 * - `readChildRun`: the child's status and result (no lock).
 * - `recordChildOutcome`: under the lease again, the step row (FOR UPDATE, rung 2) gets the terminal
 *   child's outcome, so a replay returns (or throws) the same even once the child is purged.
 *
 * The child's terminal transition wakes the parent's body job (src/coordination/run-status.ts).
 */
import { sqltag } from '@prisma/client/runtime/client';
import { withStatement, withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { LeaseName } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
import type { JsonValue } from '../model/json.js';
import { enqueueWorkflowRun } from './enqueue.js';
import { lockBody, recordWaitOutcome } from './function-wait-statements.js';
import type { WorkflowRunInput } from './run-definition.js';

export interface ChildStart {
  id: string;
  workflowRunId: string;
  stepKey: string;
  callIndex: number;
  child: WorkflowRunInput;
}

/** Starts the child and records it; returns the step's output (`{ childRunId, workflowType }`). */
export async function startChildRun(db: Db, lease: LeaseName, start: ChildStart): Promise<JsonValue> {
  return withTransaction(db, 'start child run', async ({ tx }) => {
    const organizationId = await lockBody(tx, lease, start.stepKey);
    const started = await enqueueWorkflowRun(tx, {
      ...start.child,
      organizationId,
      idempotencyKey: `runledger:${start.workflowRunId}:${start.stepKey}`,
    });
    const rows = await tx.$queryRaw<{ output: JsonValue }[]>(
      ...asTemplate(sqltag`
      WITH linked AS (
        UPDATE runledger.workflow_runs SET parent_job_id = ${lease.jobId}::uuid
         WHERE id = ${started.workflowRunId}::uuid AND parent_job_id IS NULL
      ),
      clock AS MATERIALIZED (SELECT clock_timestamp() AS at),
      inserted AS (
        INSERT INTO runledger.workflow_steps
               (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at, started_at,
                finished_at, output, call_index, created_at, updated_at)
        SELECT ${start.id}::uuid, ${start.workflowRunId}::uuid, ${start.stepKey}, 'FUNCTION', ${organizationId}::text, 'SUCCEEDED',
               c.at, c.at, c.at, jsonb_build_object('childRunId', ${started.workflowRunId}::text, 'workflowType', ${start.child.workflowType}::text),
               ${start.callIndex}::int, c.at, c.at
          FROM clock c
        RETURNING output
      ),
      notified AS (SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, ${start.workflowRunId}::text)) AS n FROM inserted)
      SELECT i.output FROM inserted i CROSS JOIN notified`),
    );
    return rows[0]!.output;
  });
}

export interface ChildRunState {
  status: string;
  result: JsonValue | null;
  statusReason: string | null;
}

/** The child run's status; null when it no longer exists (purged). */
export async function readChildRun(db: Db, childRunId: string): Promise<ChildRunState | null> {
  const rows = await withStatement(
    db,
    'read child run',
    async (client) =>
      client.$queryRaw<{ status: string; result: JsonValue | null; status_reason: string | null }[]>`
      SELECT status::text, result, status_reason FROM runledger.workflow_runs WHERE id = ${childRunId}::uuid`,
    { readCommitted: false },
  );
  const row = rows[0];
  return row ? { status: row.status, result: row.result, statusReason: row.status_reason } : null;
}

/** Records the terminal child's outcome on the step (unless recorded already); returns the step's output. */
export async function recordChildOutcome(
  db: Db,
  lease: LeaseName,
  step: { workflowRunId: string; stepKey: string },
  outcome: { [key: string]: JsonValue },
): Promise<JsonValue> {
  return recordWaitOutcome(db, lease, step, outcome, 'record child outcome');
}
