/**
 * The two statements of a durable function's attempt (docs/concepts/durable-functions.md):
 *
 * - `readFunctionRecord`: at the attempt's start, the run's recorded FUNCTION
 *   steps in call order and the database clock (one read).
 * - `recordFunctionStep`: a finished step, one statement: the `$function`
 *   job row locked by the attempt's lease (rung 1 of src/coordination/locking.ts),
 *   the clock read once it is held, the step row inserted SUCCEEDED only while
 *   that lease is live (a zombie attempt records nothing), and, when asked,
 *   the run's step-changed notification. The new row is nobody's wait. Joined
 *   to a transaction client it commits with the caller's writes (a
 *   transactional step).
 * - `announceStepChange`: the run's step-changed notification alone, for steps
 *   recorded without it (a NOTIFY's commit holds PostgreSQL's global notify
 *   lock through its WAL flush, so one per step serialized every worker's
 *   records: FunctionAttempt sends at most one per window instead).
 */
import { sqltag } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { leaseFence, lockedLeaseAndClock, type LeaseName } from '../db/fragments.js';
import { WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
import { jsonParam } from '../model/job-rows.js';
import type { JsonValue } from '../model/json.js';
import { ConflictError } from '../errors/runledger-error.js';
import { asTemplate } from '../db/sql-template.js';

export interface RecordedFunctionStep {
  stepKey: string;
  callIndex: number;
  output: JsonValue | null;
}

export interface FunctionRecord {
  steps: RecordedFunctionStep[];
  /** The database clock when read (ms since epoch): sleeps are judged on it. */
  dbNow: number;
}

export async function readFunctionRecord(db: Db, workflowRunId: string): Promise<FunctionRecord> {
  const rows = await withStatement(
    db,
    'read function steps',
    async (client) =>
      client.$queryRaw<{ step_key: string | null; call_index: number | null; output: JsonValue | null; now: Date }[]>`
      SELECT ws.step_key, ws.call_index, ws.output, c.now
        FROM (SELECT clock_timestamp() AS now) c
        LEFT JOIN runledger.workflow_steps ws
          ON ws.workflow_run_id = ${workflowRunId}::uuid AND ws.execution_kind = 'FUNCTION'
       ORDER BY ws.call_index`,
    { readCommitted: false },
  );
  return {
    dbNow: rows[0]!.now.getTime(),
    steps: rows.filter((row) => row.step_key !== null).map((row) => ({ stepKey: row.step_key!, callIndex: row.call_index!, output: row.output })),
  };
}

export interface FunctionStepRecord {
  /** Issued when the body made the call (time-ordered): steps list in call order, parallel ones included. */
  id: string;
  workflowRunId: string;
  stepKey: string;
  callIndex: number;
  /** What the step returned; ignored when `sleepUntil` is given (the output is then `{ wakeAt }`). */
  output: JsonValue | undefined;
  /** How long the step ran (its started_at is the record's clock minus this). */
  elapsedMs: number;
  /** A sleep: the wake time, as ms from the record's clock (`delayMs`) or as an instant (`until`). */
  sleep?: { delayMs: number } | { until: Date };
  /** Send the run's step-changed notification with the record. */
  announce: boolean;
}

/**
 * Records one finished step under `lease`; returns the output stored (a sleep's `{ wakeAt }`) and the clock.
 * Throws `job.lease_owner_mismatch` when the lease is no longer live: nothing is written.
 */
export async function recordFunctionStep(db: Db, lease: LeaseName, step: FunctionStepRecord): Promise<{ output: JsonValue | null; at: Date }> {
  const delayMs = step.sleep && 'delayMs' in step.sleep ? step.sleep.delayMs : null;
  const until = step.sleep && 'until' in step.sleep ? step.sleep.until.toISOString() : null;
  const isSleep = step.sleep !== undefined;
  const rows = await withStatement(db, 'record function step', async (client) =>
    client.$queryRaw<{ output: JsonValue | null; at: Date }[]>(
      ...asTemplate(sqltag`
      WITH ${lockedLeaseAndClock(lease, sqltag`, jq.organization_id`)},
      fenced AS MATERIALIZED (
        SELECT l.organization_id, c.at
          FROM locked l
          JOIN runledger.job_queue jq ON jq.id = l.id
         CROSS JOIN clock c
         WHERE ${leaseFence(lease, sqltag`c.at`)}
      ),
      inserted AS (
        INSERT INTO runledger.workflow_steps
               (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at, started_at,
                finished_at, output, call_index, created_at, updated_at)
        SELECT ${step.id}::uuid, ${step.workflowRunId}::uuid, ${step.stepKey}, 'FUNCTION', f.organization_id, 'SUCCEEDED',
               f.at - make_interval(secs => ${step.elapsedMs}::double precision / 1000),
               f.at - make_interval(secs => ${step.elapsedMs}::double precision / 1000),
               f.at,
               CASE WHEN ${isSleep}::boolean
                    THEN jsonb_build_object('wakeAt', to_char(COALESCE(${until}::timestamptz, f.at + make_interval(secs => ${delayMs}::double precision / 1000))
                                                              AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                    ELSE ${jsonParam(step.output)}::jsonb END,
               ${step.callIndex}::int, f.at, f.at
          FROM fenced f
        RETURNING output, finished_at
      ),
      notified AS (
        SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, ${step.workflowRunId}::text)) AS n FROM inserted WHERE ${step.announce}::boolean
      )
      SELECT i.output, i.finished_at AS at FROM inserted i CROSS JOIN notified`),
    ),
  );
  const row = rows[0];
  if (!row) {
    throw new ConflictError('job.lease_owner_mismatch', 'The job is no longer leased to this worker.', {
      internalMessage: `record function step ${step.stepKey}: no live lease for job ${lease.jobId} attempt ${lease.attempt} owned by ${lease.workerId}`,
      details: { jobId: lease.jobId, stepKey: step.stepKey },
    });
  }
  return row;
}

/** The run's step-changed notification, for steps recorded without one (a hint: the dashboard also polls). */
export async function announceStepChange(db: Db, workflowRunId: string): Promise<void> {
  await withStatement(
    db,
    'announce function steps',
    async (client) => client.$queryRaw`SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, ${workflowRunId}::text)) AS n`,
  );
}
