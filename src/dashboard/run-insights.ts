/**
 * What the run pages show beyond the library's reads: each run's step counts
 * and failing step (the runs list), and the attempts of a run's jobs (the run
 * timeline). Both are one statement, take no locks, and read through indexes
 * only (pinned by test/integration/dashboard-insights-plans.test.ts):
 *   - summaries: workflow_steps_run_key_key (workflow_run_id, step_key) for the
 *     page's run ids only, never the table;
 *   - attempts: the run's steps by the same index, then each step's job's
 *     attempts through job_attempt_history by job id (job_attempts_pkey and
 *     the job row's primary key), at most MAX_TIMELINE_ATTEMPTS_PER_STEP each.
 * Callers have already found the run(s) in scope; the scope is applied here
 * again so a run id from elsewhere reads nothing.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { inScopeByKind } from '../db/fragments.js';

/** Attempts the timeline draws per step: the first ones, then "and N more" (a continuation job can have thousands). */
export const MAX_TIMELINE_ATTEMPTS_PER_STEP = 20;

export interface RunStepSummary {
  total: number;
  succeeded: number;
  failed: number;
  canceled: number;
  /** Steps not terminal yet (blocked, enqueued, running, waiting). */
  open: number;
  /** The first step (by finish time, then key) that FAILED, with its error code; null when none failed. */
  failingStep: { stepKey: string; errorCode: string | null } | null;
}

interface SummaryRow {
  workflow_run_id: string;
  total: number;
  succeeded: number;
  failed: number;
  canceled: number;
  failing_step: string | null;
  failing_code: string | null;
}

const wr = sqltag`wr`;
const jq = sqltag`jq`;

/** The summaries statement, for the plan test to EXPLAIN. */
export function runSummariesQuery(scope: Scope, runIds: string[]): Sql {
  return sqltag`
    SELECT wr.id AS workflow_run_id, c.total, c.succeeded, c.failed, c.canceled, f.step_key AS failing_step, f.last_error_code AS failing_code
      FROM runledger.workflow_runs wr
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS total,
               (count(*) FILTER (WHERE st.status = 'SUCCEEDED'))::int AS succeeded,
               (count(*) FILTER (WHERE st.status = 'FAILED'))::int AS failed,
               (count(*) FILTER (WHERE st.status = 'CANCELED'))::int AS canceled
          FROM runledger.workflow_steps st WHERE st.workflow_run_id = wr.id
      ) c
      LEFT JOIN LATERAL (
        SELECT st.step_key, st.last_error_code FROM runledger.workflow_steps st
         WHERE st.workflow_run_id = wr.id AND st.status = 'FAILED'
         ORDER BY st.finished_at NULLS LAST, st.step_key LIMIT 1
      ) f ON true
     WHERE wr.id = ANY(${runIds}::uuid[]) AND ${inScopeByKind(scope, sqltag`${wr}.organization_id`)}`;
}

/** Step counts and the failing step of each run in `runIds` (a list page's runs), in `scope`. */
export async function readRunSummaries(db: Db, scope: Scope, runIds: string[]): Promise<Map<string, RunStepSummary>> {
  if (runIds.length === 0) return new Map();
  const rows = await withStatement(db, 'dashboard run summaries', async (tx) => tx.$queryRaw<SummaryRow[]>(...asTemplate(runSummariesQuery(scope, runIds))), {
    readCommitted: false,
  });
  return new Map(
    rows.map((row) => [
      row.workflow_run_id,
      {
        total: row.total,
        succeeded: row.succeeded,
        failed: row.failed,
        canceled: row.canceled,
        open: row.total - row.succeeded - row.failed - row.canceled,
        failingStep: row.failing_step === null ? null : { stepKey: row.failing_step, errorCode: row.failing_code },
      },
    ]),
  );
}

export interface TimelineAttempt {
  stepKey: string;
  attempt: number;
  runNumber: number;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  errorCode: string | null;
}

interface AttemptRow {
  step_key: string;
  attempt: number;
  run_number: number;
  started_at: Date;
  finished_at: Date | null;
  outcome: string | null;
  error_code: string | null;
}

/** The attempts statement, for the plan test to EXPLAIN. */
export function runAttemptsQuery(scope: Scope, workflowRunId: string): Sql {
  return sqltag`
    SELECT st.step_key, a.attempt, a.run_number, a.started_at, a.finished_at, a.outcome::text AS outcome, a.error_code
      FROM runledger.workflow_steps st
      JOIN runledger.job_queue jq ON jq.id = st.job_id
      CROSS JOIN LATERAL (
        SELECT h.attempt, h.run_number, h.started_at, h.finished_at, h.outcome, h.error_code, h.seq
          FROM runledger.job_attempt_history h
         WHERE h.job_id = st.job_id
         ORDER BY h.seq
         LIMIT ${MAX_TIMELINE_ATTEMPTS_PER_STEP}::int
      ) a
     WHERE st.workflow_run_id = ${workflowRunId}::uuid AND ${inScopeByKind(scope, sqltag`${jq}.organization_id`)}
     ORDER BY st.step_key, a.seq`;
}

/** The first attempts of every job of the run, for its timeline. */
export async function readRunAttempts(db: Db, scope: Scope, workflowRunId: string): Promise<TimelineAttempt[]> {
  const rows = await withStatement(
    db,
    'dashboard run attempts',
    async (tx) => tx.$queryRaw<AttemptRow[]>(...asTemplate(runAttemptsQuery(scope, workflowRunId))),
    { readCommitted: false },
  );
  return rows.map((row) => ({
    stepKey: row.step_key,
    attempt: row.attempt,
    runNumber: row.run_number,
    startedAt: row.started_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
    outcome: row.outcome,
    errorCode: row.error_code,
  }));
}
