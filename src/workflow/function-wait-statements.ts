/**
 * The statements of a durable function's signal wait (docs/concepts/durable-functions.md, "Signals"), each
 * a transaction of two statements under the attempt's lease:
 *   1. the `$function` job row locked by the lease (rung 1 of src/coordination/locking.ts), fenced: a zombie
 *      attempt writes nothing (`job.lease_owner_mismatch`). `signal` locks the same row first, so a wait
 *      and a send of one run never interleave.
 *   2. with a snapshot taken once that lock is held (so a send that committed while we waited is seen):
 *      - `openSignalWait`: the oldest unconsumed signal of the name (FOR UPDATE; only ever locked under the
 *        run's body row, so it adds no wait of its own), the wait's FUNCTION step row (new: nobody waits on
 *        it), SUCCEEDED with `{ signal, timeoutAt }` and, when it took a signal (or has no time to wait), its
 *        outcome. A wait without an outcome is open: `signal` resolves it.
 *      - `timeOutSignalWait`: the open wait's step row (FOR UPDATE, rung 2) gets the timeout as its outcome,
 *        unless a signal resolved it first; either way the stored outcome is returned.
 */
import { sqltag } from '@prisma/client/runtime/client';
import { withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { leaseFence, lockedLeaseAndClock, type LeaseName } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { ConflictError } from '../errors/runledger-error.js';
import { WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
import { jsonParam } from '../model/job-rows.js';
import type { JsonValue } from '../model/json.js';

const ISO_MS = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

export interface SignalWaitRecord {
  id: string;
  workflowRunId: string;
  stepKey: string;
  callIndex: number;
  name: string;
  /** null: no timeout. */
  timeoutMs: number | null;
}

/** Opens a wait (or resolves it at once from the mailbox); returns the step's output and the clock. */
export async function openSignalWait(db: Db, lease: LeaseName, wait: SignalWaitRecord): Promise<{ output: JsonValue; at: Date }> {
  return withTransaction(db, 'open signal wait', async ({ tx }) => {
    const organizationId = await lockBody(tx, lease, wait.stepKey);
    const rows = await tx.$queryRaw<{ output: JsonValue; at: Date }[]>(
      ...asTemplate(sqltag`
      WITH clock AS MATERIALIZED (SELECT clock_timestamp() AS at),
      taken AS MATERIALIZED (
        SELECT s.id, s.payload FROM runledger.workflow_signals s
         WHERE s.workflow_run_id = ${wait.workflowRunId}::uuid AND s.name = ${wait.name} AND s.consumed_by_step_id IS NULL
         ORDER BY s.seq
         LIMIT 1
           FOR UPDATE
      ),
      consumed AS (
        UPDATE runledger.workflow_signals s SET consumed_by_step_id = ${wait.id}::uuid, consumed_at = c.at
          FROM taken t, clock c WHERE s.id = t.id
      ),
      inserted AS (
        INSERT INTO runledger.workflow_steps
               (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at, started_at,
                finished_at, output, call_index, created_at, updated_at)
        SELECT ${wait.id}::uuid, ${wait.workflowRunId}::uuid, ${wait.stepKey}, 'FUNCTION', ${organizationId}::text, 'SUCCEEDED',
               c.at, c.at, c.at,
               jsonb_build_object('signal', ${wait.name}::text, 'timeoutAt',
                 CASE WHEN ${wait.timeoutMs}::float8 IS NULL THEN NULL
                      ELSE to_char((c.at + make_interval(secs => ${wait.timeoutMs}::float8 / 1000)) AT TIME ZONE 'UTC', ${ISO_MS}) END)
               || CASE WHEN t.id IS NOT NULL THEN jsonb_build_object('outcome', 'received', 'payload', t.payload, 'signalId', t.id::text)
                       WHEN ${wait.timeoutMs}::float8 = 0 THEN jsonb_build_object('outcome', 'timeout')
                       ELSE '{}'::jsonb END,
               ${wait.callIndex}::int, c.at, c.at
          FROM clock c LEFT JOIN taken t ON true
        RETURNING output, finished_at
      ),
      notified AS (SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, ${wait.workflowRunId}::text)) AS n FROM inserted)
      SELECT i.output, i.finished_at AS at FROM inserted i CROSS JOIN notified`),
    );
    return rows[0]!;
  });
}

/** A due open wait: records its timeout, unless a signal resolved it first; returns the outcome stored. */
export async function timeOutSignalWait(db: Db, lease: LeaseName, wait: Pick<SignalWaitRecord, 'workflowRunId' | 'stepKey'>): Promise<JsonValue> {
  return recordWaitOutcome(db, lease, wait, { outcome: 'timeout' }, 'time out signal wait');
}

/**
 * Merges `outcome` into an open wait step's output (a signal wait's timeout, a child's end: function-child.ts)
 * under the body's lock, unless an outcome is there already; returns the output stored.
 */
export async function recordWaitOutcome(
  db: Db,
  lease: LeaseName,
  step: { workflowRunId: string; stepKey: string },
  outcome: { [key: string]: JsonValue },
  label: string,
): Promise<JsonValue> {
  return withTransaction(db, label, async ({ tx }) => {
    await lockBody(tx, lease, step.stepKey);
    const rows = await tx.$queryRaw<{ output: JsonValue }[]>`
      WITH clock AS MATERIALIZED (SELECT clock_timestamp() AS at),
      cur AS MATERIALIZED (
        SELECT ws.id, ws.output FROM runledger.workflow_steps ws
         WHERE ws.workflow_run_id = ${step.workflowRunId}::uuid AND ws.step_key = ${step.stepKey}
           FOR UPDATE
      ),
      recorded AS (
        UPDATE runledger.workflow_steps ws
           SET output = ws.output || ${jsonParam(outcome)}::jsonb, finished_at = c.at, updated_at = c.at
          FROM cur w, clock c
         WHERE ws.id = w.id AND w.output->'outcome' IS NULL
        RETURNING ws.output
      ),
      notified AS (SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, ${step.workflowRunId}::text)) AS n FROM recorded)
      SELECT COALESCE((SELECT output FROM recorded), (SELECT output FROM cur)) AS output FROM notified`;
    return rows[0]!.output;
  });
}

/** Statement 1 (also of a child's start, function-child.ts): the lease's job row, locked and fenced; its organization. */
export async function lockBody(tx: Tx, lease: LeaseName, stepKey: string): Promise<string | null> {
  const rows = await tx.$queryRaw<{ organization_id: string | null }[]>(
    ...asTemplate(sqltag`
    WITH ${lockedLeaseAndClock(lease, sqltag`, jq.organization_id`)}
    SELECT l.organization_id
      FROM locked l
      JOIN runledger.job_queue jq ON jq.id = l.id
     CROSS JOIN clock c
     WHERE ${leaseFence(lease, sqltag`c.at`)}`),
  );
  if (rows.length === 0) {
    throw new ConflictError('job.lease_owner_mismatch', 'The job is no longer leased to this worker.', {
      internalMessage: `signal wait ${stepKey}: no live lease for job ${lease.jobId} attempt ${lease.attempt} owned by ${lease.workerId}`,
      details: { jobId: lease.jobId, stepKey },
    });
  }
  return rows[0]!.organization_id;
}
