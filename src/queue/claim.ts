/**
 * Claim: one statement leases a batch of runnable jobs to one worker.
 *
 * Invariants:
 * - Only PENDING jobs with `next_run_at <= now()` are claimed, highest
 *   priority first, then the earliest due, then id (the claim index order);
 *   jobs with a fairness key take turns per key within a priority
 *   (src/queue/statements/fair-turns.ts).
 * - `FOR UPDATE SKIP LOCKED`: concurrent claimers never wait for each other
 *   and never receive the same job; a row another claimer holds is skipped.
 * - Each claimed job gets `attempt + 1`, an owner, an expiry on the database
 *   clock and its open attempt, all on its own row (src/queue/attempt-row.ts), which is also its trail's
 *   LEASED event (and RUNNING event with `markRunning`, which folds the RUNNING transition into the claim
 *   so it costs no commit): one row write per direct job (see the job_trail view).
 * - A claim writes no step row: a workflow step whose job is LEASED reads as
 *   RUNNING (src/coordination/step-state.ts), so a chain step costs one row
 *   write fewer and the claim takes no step lock.
 * - Each claimed job's attempt opens here, on the job row; the statement
 *   that ends the lease closes it (src/queue/attempt-row.ts).
 * - A workflow job comes back with its step's run, key and prerequisites'
 *   outcomes (`step`), and every job with its enqueuer's trace context, so
 *   the worker starts a handler without another round trip.
 * - One statement, sent as one autocommit statement on a root client
 *   (`withStatement`), joining a caller's transaction otherwise; on a root
 *   client, while no job at the head names a fairness, concurrency or rate
 *   key, the lean statement (src/queue/statements/claim-lean.ts): it leases
 *   the prefix the full one would lease first and says where it stopped, and
 *   the full statement takes the rest in the same call.
 *
 * Execution resources: a job with a `resource_key` is a candidate only when
 * it is its key's head (the key's first due PENDING job in claim order, so a
 * key's jobs run oldest first and none starves behind later ones) and no job
 * of the key holds it (LEASED, or CANCELED inside the lease it had, whose
 * handler may still be running). So one claim leases at most one job per
 * key, a blocked job is skipped before it is locked (it stays PENDING at
 * attempt 0 and takes no claim slot), and jobs without a key pay one
 * `IS NULL` test. The check reads the statement's snapshot; a lease of the
 * same key committed while this statement ran is caught by the schema
 * (job_leases_resource_uidx, on the lease rows the claim inserts), and the
 * claim is retried (see `claimJobs`). The lease row is the reservation: every
 * transition out of LEASED deletes it (a cancellation marks it canceled until
 * it runs out) in the statement that writes the job row.
 *
 * Lock order: job rows (SKIP LOCKED, so no waits), then the new lease rows
 * (src/queue/statements/lease-rows.ts). The steps and
 * prerequisites a claimed job's handler reads are read without locks from the
 * statement's snapshot (see the final SELECT).
 */
import type { Db } from '../client/types.js';
import { asTemplate } from '../db/sql-template.js';
import { claimJobsStatement } from './statements/claim-jobs.js';
import { leanClaimStatement } from './statements/claim-lean.js';
import { keepClaimedFunctionRecord, type ClaimedFunctionRecordRow } from './claimed-function-record.js';
import { isTransactionClient } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { ConflictError } from '../errors/runledger-error.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../model/json.js';
import type { ClaimedJob, ClaimedPrerequisite } from '../job/claimed-job.js';
import { JOB_INVALID_INPUT, claimJobsInputSchema, type ClaimJobsInput } from './inputs.js';

interface ClaimedRow {
  id: string;
  run_number: number;
  attempt: number;
  lease_owner: string;
  lease_expires_at: Date;
  job_type: string;
  organization_id: string | null;
  payload: JsonValue;
  checkpoint: JsonValue | null;
  progress: JsonValue | null;
  timeout_seconds: number;
  max_attempts: number;
  workflow_managed: boolean;
  resource_key: string | null;
  concurrency_key: string | null;
  rate_key: string | null;
  fair_key: string | null;
  /** The full claim's: where its walk over fairness keys stopped. */
  fair_next?: string | null;
  /** The lean claim's: it stopped before a job only the full claim may lease (claim-lean.ts). */
  needs_full?: boolean;
  step_run_id: string | null;
  step_key: string | null;
  prerequisites: ClaimedPrerequisite[] | null;
  trace_context: JsonValue | null;
  queue_wait_ms: number;
  stage: string | null;
  function_record: ClaimedFunctionRecordRow | null;
}

/**
 * Leases up to `limit` runnable jobs to `workerId` for `leaseSeconds`.
 *
 * @example
 * const jobs = await claimJobs(prisma, { workerId: 'w1', jobTypes: ['email.send'], limit: 20, leaseSeconds: 60, markRunning: true });
 */
export async function claimJobs(db: Db, input: ClaimJobsInput): Promise<ClaimedJob[]> {
  const { workerId, jobTypes, limit, leaseSeconds, markRunning = false } = parseInput(claimJobsInputSchema, input, JOB_INVALID_INPUT);
  const state = claimState(db);
  const walk = jobTypes === undefined ? '' : jobTypes.join('\u0000');
  const full = (size: number): Promise<ClaimedJob[]> =>
    withResourceRaceRetry(db, () =>
      withStatement(db, 'claim jobs', async (client) => {
        const fairAfter = state.cursors.get(walk) ?? '';
        const statement = claimJobsStatement({ workerId, jobTypes, limit: size, leaseSeconds, markRunning, fairAfter });
        const rows = await client.$queryRaw<ClaimedRow[]>(...asTemplate(statement));
        const next = rows[0]?.fair_next ?? null;
        if (next !== null && next !== fairAfter) state.cursors.set(walk, next);
        return claimedJobs(rows);
      }),
    );
  // The lean claim only as an autocommit statement (its keyed rows stay locked no longer than it runs), and
  // not again soon after it declined: keyed work at the head would otherwise cost two statements a claim.
  if (isTransactionClient(db) || Date.now() < (state.fullUntil.get(walk) ?? 0)) return full(limit);
  let needsFull = false;
  const lean = await withResourceRaceRetry(db, () =>
    withStatement(db, 'claim jobs', async (client) => {
      const rows = await client.$queryRaw<ClaimedRow[]>(...asTemplate(leanClaimStatement({ workerId, jobTypes, limit, leaseSeconds, markRunning })));
      needsFull = rows[0]?.needs_full === true;
      return claimedJobs(rows);
    }),
  );
  if (!needsFull) return lean;
  state.fullUntil.set(walk, Date.now() + FULL_CLAIMS_AFTER_DECLINE_MS);
  // What the full claim takes now comes after the lean claim's prefix in claim order.
  return lean.length < limit ? [...lean, ...(await full(limit - lean.length))] : lean;
}

/** How long a client's claims of the same types go straight to the full statement after a lean one declined. */
const FULL_CLAIMS_AFTER_DECLINE_MS = 10_000;

function claimedJobs(rows: readonly ClaimedRow[]): ClaimedJob[] {
  // No job claimed: the one row carries only the statement's facts (its id is NULL).
  const receivedAt = Date.now();
  return rows.filter((row) => row.id !== null).map((row) => toClaimedJob(row, receivedAt));
}

/**
 * A claim that lost a resource race is sent again: a concurrent claim leased another job of a key this one
 * picked, and committed while this statement ran (its snapshot still showed the key free): nothing was
 * written, and a fresh statement sees that lease. Inside a transaction the statement cannot be re-sent.
 */
async function withResourceRaceRetry(db: Db, claim: () => Promise<ClaimedJob[]>): Promise<ClaimedJob[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await claim();
    } catch (error) {
      if (!isResourceClaimRace(error)) throw error;
      if (isTransactionClient(db) || attempt >= MAX_RESOURCE_RACE_RETRIES) {
        throw new ConflictError('job.resource_claim_conflict', 'A concurrent claim took the same execution resource; retry the claim.', {
          internalMessage: `claim jobs: job_leases_resource_uidx violated (${attempt} attempt(s))`,
          cause: error,
        });
      }
    }
  }
}

/**
 * Each client's claim state, per set of claimed types: its cursor over fairness keys
 * (src/queue/statements/fair-turns.ts: the next claim of the same types from the same client, a worker's or
 * the root of a transaction client, continues the round where the last one stopped), and until when its
 * claims skip the lean statement. Kept in the process: a new process starts at the first key, lean.
 */
interface ClaimState {
  cursors: Map<string, string>;
  fullUntil: Map<string, number>;
}
const CLAIM_STATES = new WeakMap<object, ClaimState>();
function claimState(db: Db): ClaimState {
  const root = (isTransactionClient(db) ? ((db as { $parent?: object }).$parent ?? db) : db) as object;
  let state = CLAIM_STATES.get(root);
  if (state === undefined) {
    state = { cursors: new Map(), fullUntil: new Map() };
    CLAIM_STATES.set(root, state);
  }
  return state;
}

/** Attempts of a root-client claim that lost a resource race to a concurrent one (rare: see the header). */
const MAX_RESOURCE_RACE_RETRIES = 5;

/** A claim that lost the race for a resource key (exported for the test that feeds it the real error). */
export function isResourceClaimRace(error: unknown): boolean {
  const { sqlState, message } = databaseErrorInfo(error);
  return sqlState === '23505' && message.includes('job_leases_resource_uidx');
}

function toClaimedJob(row: ClaimedRow, receivedAt: number): ClaimedJob {
  const job: ClaimedJob = {
    jobId: row.id,
    runNumber: row.run_number,
    attempt: row.attempt,
    workerId: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    jobType: row.job_type,
    organizationId: row.organization_id,
    payload: row.payload,
    checkpoint: row.checkpoint,
    progress: row.progress,
    timeoutSeconds: row.timeout_seconds,
    maxAttempts: row.max_attempts,
    workflowManaged: row.workflow_managed,
    resourceKey: row.resource_key,
    concurrencyKey: row.concurrency_key,
    rateKey: row.rate_key,
    fairKey: row.fair_key,
    step:
      row.step_run_id === null || row.step_key === null
        ? null
        : { workflowRunId: row.step_run_id, stepKey: row.step_key, prerequisites: row.prerequisites ?? [] },
    traceContext: row.trace_context,
    queueWaitMs: Math.max(0, row.queue_wait_ms),
    stage: row.stage,
  };
  if (row.function_record !== null) keepClaimedFunctionRecord(job, row.function_record, receivedAt);
  return job;
}
