/**
 * One attempt of a transactional job type (`defineJob(..., { transaction: prisma })`)
 * as one interactive transaction of the host's client:
 *
 *   BEGIN (READ COMMITTED; statement, idle and, on PostgreSQL 17+, transaction
 *          timeouts bounded by the job's deadline)
 *   handler(payload, { ...ctx, tx })          the host's writes, enqueues through ctx.tx
 *   the outcome is taken ('handler')          from here the timeout and heartbeats stop
 *   completeJob(tx) / continueJobs(tx) the fence (owner, attempt, live expiry) is checked here,
 *                                             the job row locked; a workflow step's dependents are
 *                                             released and its run's status written, in this transaction
 *   COMMIT                                    everything the attempt decided, or nothing
 *
 * Why this is exactly once for the handler's writes: they commit only in the
 * transaction that moves the job out of LEASED under this attempt's lease,
 * and the fence makes at most one transaction per lease able to do that. A
 * throw, a refused fence, a timeout, a lost lease, a shutdown, a crash or a
 * lost connection ends the transaction without COMMIT: PostgreSQL rolls it
 * back (a dead session's transaction too), the job stays LEASED, and either
 * the worker records the failure afterwards in a transaction of its own or
 * the lease expires and the reaper gives the job to a new attempt that
 * starts from clean data.
 *
 * The job row is locked only by the completion statement at the end, never
 * while the handler runs: heartbeats and ctx's progress writes (on the
 * worker's own connections) keep working, and the reaper (SKIP LOCKED) skips
 * the row only during the short commit. Between the fence and COMMIT the row
 * lock keeps the lease from being taken over, so a commit that passed the
 * fence is never preceded by another attempt's.
 *
 * Lock order (extends src/coordination/locking.ts): whatever the handler locks
 * through ctx.tx comes first, then the completion takes rung 1 (the job row)
 * and what follows it. runledger's own transactions never lock a host's rows,
 * so the host's locks cannot close a cycle with them; a handler that also
 * takes runledger's locks through ctx.tx (an enqueue with an active key, a
 * cancellation) may meet one, which PostgreSQL breaks (40P01): that attempt
 * rolls back and is recorded as a retryable failure, like any deadlock of
 * the host's own.
 *
 * A COMMIT whose answer was lost (the connection died while it was sent)
 * may have committed: the worker reads the job before it records a failure
 * (confirmCompletions), and the fenced failure write refuses in any case.
 *
 * A database fault does not use up the attempt (unspentAttemptReason): an
 * attempt whose transaction could not open (the handler never ran), or whose
 * transaction's connection was lost under the handler or at the commit, is
 * released (`database.unavailable`, its attempt given back) and re-runs on
 * clean data. Only the transaction's own connection counts: a handler's
 * call to another service failing with a socket error is the handler's
 * failure, told apart by one probe of the transaction.
 */
import { readCommittedIsolation } from '../client/transaction.js';
import type { Db, PrismaClientLike } from '../client/types.js';
import { databaseErrorInfo, isConnectionFault, normalizeDatabaseError } from '../errors/database-error.js';
import { isRunledgerError, type RunledgerError } from '../errors/runledger-error.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { completeJob } from '../queue/complete.js';
import { continueJobs } from '../queue/continue.js';
import { MAX_ERROR_MESSAGE_LENGTH } from '../job/defaults.js';
import { toStorableJson } from '../validation/jsonified.js';
import type { JsonValue } from '../model/json.js';
import { toStorableText } from '../validation/storable.js';
import { isContinuation } from '../job/continuation.js';
import { continuationFields } from '../job/continuation-fields.js';
import { JOB_OUTPUT_INVALID, JOB_TIMEOUT, describeFailure, outputProblem, type FailureRecord } from '../job/errors.js';

/** Added to the job's remaining time for the server-side backstops (idle, transaction timeouts) and Prisma's own timer. */
export const TRANSACTION_GRACE_MS = 2_000;
/** Longest wait for a pooled connection to open the attempt's transaction. */
const MAX_CONNECTION_WAIT_MS = 10_000;

/**
 * Runs `fn` in an interactive READ COMMITTED transaction of `client`, bounded
 * by `deadline` (epoch ms): each statement by `statement_timeout`, the time
 * idle inside it by `idle_in_transaction_session_timeout` and, on PostgreSQL
 * 17+, the whole by `transaction_timeout`, all set LOCAL (they end with the
 * transaction), and Prisma's own timer a grace later. READ COMMITTED because
 * the completion fence must see the heartbeats other connections committed
 * while the handler ran (a REPEATABLE READ snapshot would not).
 */
export async function runAttemptTransaction<R>(client: PrismaClientLike, deadline: number, fn: (tx: unknown) => Promise<R>): Promise<R> {
  const remaining = Math.max(1, Math.trunc(deadline - Date.now()));
  const isolation = await readCommittedIsolation(client, 'open a transactional attempt');
  const statementMs = `${remaining}ms`;
  const backstopMs = `${remaining + TRANSACTION_GRACE_MS}ms`;
  return client.$transaction(
    async (tx: { $queryRaw: PrismaClientLike['$queryRaw'] }) => {
      await tx.$queryRaw`
        SELECT set_config('statement_timeout', ${statementMs}, true),
               set_config('idle_in_transaction_session_timeout', ${backstopMs}, true),
               CASE WHEN current_setting('server_version_num')::int >= 170000
                    THEN set_config('transaction_timeout', ${backstopMs}, true) END`;
      return fn(tx);
    },
    { ...isolation, maxWait: Math.min(remaining, MAX_CONNECTION_WAIT_MS), timeout: remaining + TRANSACTION_GRACE_MS },
  );
}

/** What a transactional attempt's transaction reached before COMMIT. */
export type AttemptCommitted =
  | { kind: 'succeeded'; output: JsonValue | undefined }
  | { kind: 'continued'; runNumber: number; nextRunAt: Date; delayMs: number };

/** Thrown inside an attempt's transaction to roll it back; the worker then records `failure`, or the refused fence. */
export class AttemptRollback extends Error {
  constructor(
    readonly failure: FailureRecord | 'lease lost',
    /** What the failure event reports as its error (the output, the refusal). */
    readonly detail: unknown,
  ) {
    super('transactional attempt rolled back');
    this.name = new.target.name;
  }
}

const JOB_WORKFLOW_CONTINUATION_NOT_ENABLED = 'job.workflow_handler_continuation_not_enabled';

/**
 * Inside the attempt's transaction, once the handler returned: the job's
 * outcome through the ordinary completion functions joined to `tx`
 * (completeJob, continueJobs: the same statements as every
 * completion, fenced to the lease). An output that cannot be stored, a
 * continuation its step did not allow, or a refused fence throws
 * AttemptRollback, which rolls the handler's writes back too.
 */
export async function commitAttemptOutcome(tx: Db, job: ClaimedJob, output: unknown): Promise<AttemptCommitted> {
  if (isContinuation(output)) {
    const converted = continuationFields(output);
    if (!converted.ok) throw new AttemptRollback(converted.failure, output);
    const [result] = await continueJobs(tx, [{ lease: job, delayMs: output.delayMs, ...converted.fields }]);
    if (result?.outcome === 'continued') return { kind: 'continued', runNumber: result.runNumber, nextRunAt: result.nextRunAt, delayMs: output.delayMs };
    if (result?.outcome === 'not_enabled') {
      const message = 'The handler returned a continuation, but its workflow step was not enqueued with allowContinuation.';
      throw new AttemptRollback({ code: JOB_WORKFLOW_CONTINUATION_NOT_ENABLED, message, retryable: false }, output);
    }
    throw new AttemptRollback('lease lost', output);
  }
  // As for a direct handler: stored the way JSON.stringify writes it; only what JSON cannot hold fails.
  const storable = toStorableJson(output);
  if (!storable.ok) {
    const problem = outputProblem(storable.problem);
    throw new AttemptRollback({ code: JOB_OUTPUT_INVALID, message: toStorableText(problem, MAX_ERROR_MESSAGE_LENGTH), retryable: false }, output);
  }
  const stored = storable.value as JsonValue | undefined;
  try {
    await completeJob(tx, { ...job, output: stored });
  } catch (error) {
    if (isRunledgerError(error, 'job.lease_owner_mismatch')) throw new AttemptRollback('lease lost', error);
    throw error;
  }
  return { kind: 'succeeded', output: stored };
}

/** The handler threw while its transaction's connection was gone: the error is the database's, not the handler's. */
export class TransactionLost extends Error {
  constructor(readonly handlerError: unknown) {
    super('the transactional attempt lost its connection', { cause: handlerError });
    this.name = new.target.name;
  }
}

/**
 * What to rethrow from the attempt's transaction when the handler threw
 * `error`. A throw shaped like a connection fault is checked with one probe of
 * `tx`: a probe that fails other than as an aborted transaction (25P02, the
 * handler's own failed statement) means the transaction's connection is gone,
 * and the throw is a TransactionLost; otherwise it is the handler's (a socket
 * error from a payment API, say) and spends the attempt like any other.
 */
export async function handlerThrew(tx: { $queryRaw: PrismaClientLike['$queryRaw'] }, error: unknown, signal: AbortSignal): Promise<never> {
  if (signal.aborted || !isConnectionFault(error)) throw error;
  try {
    await tx.$queryRaw`SELECT 1`;
  } catch (probeError) {
    if (databaseErrorInfo(probeError).sqlState !== '25P02') throw new TransactionLost(error);
  }
  throw error;
}

/** How far a transactional attempt got before its transaction ended without COMMIT. */
export type AttemptPhase = 'opening' | 'handler' | 'commit';

/**
 * The reason a rolled-back attempt is released with its attempt not used up,
 * or undefined when it is recorded as a failure (transactionalFailure): the
 * transaction could not open (the handler never ran: the database error's
 * code, `database.unavailable` for a connection fault), or its connection was
 * lost under the handler (TransactionLost) or at the commit, before the
 * job's deadline (after it, the attempt timed out, whichever bound noticed).
 */
export function unspentAttemptReason(error: unknown, phase: AttemptPhase, deadline: number): string | undefined {
  if (phase === 'opening') return isConnectionFault(error) ? 'database.unavailable' : normalizeDatabaseError(error, 'open a transactional attempt').code;
  if (timedOut(error, deadline)) return undefined;
  if (error instanceof TransactionLost || (phase === 'commit' && isConnectionFault(error))) return 'database.unavailable';
  return undefined;
}

/** The database's error behind a released attempt, coded (`database.unavailable`) for the worker's log. */
export function releasedAttemptError(error: unknown): RunledgerError {
  return normalizeDatabaseError(error instanceof TransactionLost ? error.handlerError : error, 'run a transactional attempt');
}

/** Resolves or rejects with `work`, or rejects with the signal's reason as soon as it aborts (the transaction then rolls back). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * How a failed transactional attempt is recorded. Its transaction outliving
 * the job's timeout is a `job.timeout` (retryable), whichever bound noticed:
 * Prisma's expired transaction (P2028, which the error module otherwise files
 * under `database.unavailable`), a statement canceled by the statement
 * timeout (57014), or any failure after the deadline. Everything else is
 * classified like a direct handler's throw.
 */
export function transactionalFailure(error: unknown, timeoutSeconds: number, deadline: number): FailureRecord {
  if (timedOut(error, deadline)) {
    const why = isExpiredTransaction(error) ? 'its transaction expired' : 'its transaction was canceled at the deadline';
    return {
      code: JOB_TIMEOUT,
      message: `The job did not finish within its timeout of ${timeoutSeconds} s: ${why}; its writes were rolled back.`,
      retryable: true,
    };
  }
  return describeFailure(error instanceof TransactionLost ? error.handlerError : error);
}

function timedOut(error: unknown, deadline: number): boolean {
  return isExpiredTransaction(error) || databaseErrorInfo(error).sqlState === '57014' || Date.now() >= deadline;
}

function isExpiredTransaction(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth += 1) {
    const record = current as Record<string, unknown>;
    if (record.code === 'P2028' && typeof record.message === 'string' && /expired transaction/.test(record.message)) return true;
    current = record.cause;
  }
  return false;
}
