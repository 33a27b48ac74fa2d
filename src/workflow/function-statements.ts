/**
 * The statements of a durable function's attempt (docs/concepts/durable-functions.md):
 *
 * - `readFunctionRecord`: at the start of an attempt whose claim did not read
 *   it (src/queue/claimed-function-record.ts), the run's recorded FUNCTION
 *   steps in call order and the database clock (one read).
 * - `recordFunctionSteps`: finished steps, one statement: each step's `$function`
 *   job row locked by its attempt's lease (rung 1 of src/coordination/locking.ts),
 *   the clock read once they are held, each step row inserted SUCCEEDED only while
 *   its lease is live (a zombie attempt records nothing), and, when asked,
 *   the run's step-changed notification. The new rows are nobody's wait. Joined
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
import { leaseIdentity, leaseLive, type LeaseName } from '../db/fragments.js';
import { WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
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
  stepKey: string;
  callIndex: number;
  /** What the step returned; ignored when `sleep` is given (the output is then `{ wakeAt }`). */
  output: JsonValue | undefined;
  /** How long the step ran (its started_at is the record's clock minus this). */
  elapsedMs: number;
  /** A sleep: the wake time, as ms from the record's clock (`delayMs`) or as an instant (`until`). */
  sleep?: { delayMs: number } | { until: Date };
}

export interface RecordedStepRow {
  output: JsonValue | null;
  at: Date;
}

/** A finished step to record, with the attempt's lease that records it and the step's run. */
export interface StepToRecord {
  lease: LeaseName;
  workflowRunId: string;
  step: FunctionStepRecord;
}

/**
 * Records finished steps in one statement, each under its attempt's lease (steps of several attempts, e.g.
 * of every function a worker runs, share it: function-record-batch.ts). Returns, in the order given, each
 * step's stored output (a sleep's `{ wakeAt }`) and the clock, or null where its lease is no longer live
 * (that step is not written; the others are). `announce`: send each run's step-changed notification.
 */
export async function recordFunctionSteps(db: Db, items: readonly StepToRecord[], announce: boolean): Promise<(RecordedStepRow | null)[]> {
  const input = JSON.stringify(
    items.map(({ lease, workflowRunId, step }) => ({
      job_id: lease.jobId,
      run_number: lease.runNumber,
      attempt: lease.attempt,
      worker_id: lease.workerId,
      run_id: workflowRunId,
      id: step.id,
      step_key: step.stepKey,
      call_index: step.callIndex,
      output: step.sleep === undefined ? (step.output ?? null) : null,
      elapsed_ms: step.elapsedMs,
      sleep: step.sleep !== undefined,
      delay_ms: step.sleep && 'delayMs' in step.sleep ? step.sleep.delayMs : null,
      until: step.sleep && 'until' in step.sleep ? step.sleep.until.toISOString() : null,
    })),
  );
  const rows = await withStatement(db, 'record function steps', async (client) =>
    client.$queryRaw<{ id: string; output: JsonValue | null; at: Date }[]>(
      ...asTemplate(sqltag`
      -- A JSON null output reads as SQL NULL, as it is stored (jsonParam).
      WITH input AS (
        SELECT * FROM jsonb_to_recordset(${input}::jsonb)
            AS s(job_id uuid, run_number int, attempt int, worker_id text, run_id uuid, id uuid, step_key text, call_index int,
                 output jsonb, elapsed_ms float8, sleep boolean, delay_ms float8, until text)
      ),
      -- Rung 1: the leases' job rows, in id order (two overlapping batches cannot deadlock), each matched to its
      -- lease by primary key; the statement that ends a lease takes the same row, so none ends in between.
      locked AS MATERIALIZED (
        SELECT jq.id, jq.run_number, jq.attempt, jq.lease_owner, jq.organization_id
          FROM (SELECT DISTINCT job_id, run_number, attempt, worker_id FROM input) i
          JOIN runledger.job_queue jq ON ${leaseIdentity({ rows: 'i' })}
         ORDER BY jq.id
           FOR UPDATE OF jq
      ),
      -- Read once every lock is held: the fence judges each lease at the time of the write.
      clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
      fenced AS MATERIALIZED (
        SELECT l.id AS job_id, l.run_number, l.attempt, l.lease_owner, l.organization_id, c.at
          FROM locked l
          JOIN runledger.job_queue jq ON jq.id = l.id
         CROSS JOIN clock c
         WHERE ${leaseLive(sqltag`c.at`)}
      ),
      inserted AS (
        INSERT INTO runledger.workflow_steps
               (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at, started_at,
                finished_at, output, call_index, created_at, updated_at)
        SELECT s.id, s.run_id, s.step_key, 'FUNCTION', f.organization_id, 'SUCCEEDED',
               f.at - make_interval(secs => s.elapsed_ms / 1000),
               f.at - make_interval(secs => s.elapsed_ms / 1000),
               f.at,
               CASE WHEN s.sleep
                    THEN jsonb_build_object('wakeAt', to_char(COALESCE(s.until::timestamptz, f.at + make_interval(secs => s.delay_ms / 1000))
                                                              AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                    ELSE s.output END,
               s.call_index, f.at, f.at
          FROM input s
          JOIN fenced f ON f.job_id = s.job_id AND f.run_number = s.run_number AND f.attempt = s.attempt AND f.lease_owner = s.worker_id
        RETURNING id, workflow_run_id, output, finished_at
      ),
      notified AS (
        SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, r.run_id::text)) AS n
          FROM (SELECT DISTINCT workflow_run_id AS run_id FROM inserted) r
         WHERE ${announce}::boolean
      )
      SELECT i.id::text AS id, i.output, i.finished_at AS at FROM inserted i CROSS JOIN notified`),
    ),
  );
  const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
  return items.map(({ step }) => {
    const row = byId.get(step.id.toLowerCase());
    return row ? { output: row.output, at: row.at } : null;
  });
}

/** The error of a step whose attempt's lease is no longer live (nothing of it was written). */
export function stepLeaseLost(lease: LeaseName, stepKey: string): ConflictError {
  return new ConflictError('job.lease_owner_mismatch', 'The job is no longer leased to this worker.', {
    internalMessage: `record function step ${stepKey}: no live lease for job ${lease.jobId} attempt ${lease.attempt} owned by ${lease.workerId}`,
    details: { jobId: lease.jobId, stepKey },
  });
}

/** Records one step under `lease` (a sleep, or a transactional step inside its transaction); throws when the lease is gone. */
export async function recordFunctionStep(db: Db, item: StepToRecord, announce: boolean): Promise<RecordedStepRow> {
  const [row] = await recordFunctionSteps(db, [item], announce);
  if (!row) throw stepLeaseLost(item.lease, item.step.stepKey);
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
