/**
 * One claimed job inside the worker, from claim to recorded outcome.
 *
 *   RUNNING --handler returns-------------> SUCCESS   (queued on the completion batch)
 *   RUNNING --handler returns continueNow/After--> CONTINUED (queued on the completion batch; a workflow
 *                                            step that did not opt in: FAILURE, terminal)
 *   RUNNING --handler throws--------------> FAILURE   (failJob: retry or dead-letter)
 *   RUNNING --payload/output invalid------> FAILURE   (failJob, terminal)
 *   RUNNING --timeoutSeconds elapse-------> TIMEOUT   (abort signal; failJob job.timeout, retryable)
 *   RUNNING --heartbeat/save fenced out---> LEASE LOST (abort signal; nothing recorded)
 *   RUNNING --stop() past drain deadline--> SHUTDOWN  (abort signal; releaseJob job.worker_shutdown, attempt not used up)
 *   (never started) --releaseUnstarted--> RELEASED (releaseJob: a buffered job given back unrun)
 *   (transactional) --database fault------> RELEASED (releaseJob database.unavailable: transactional-attempt.ts)
 *
 * A transactional job type runs the handler and records SUCCESS or
 * CONTINUED inside one transaction of the host's client (see
 * transactional-attempt.ts), not on the completion batch; every other
 * outcome is recorded after that transaction rolled back, as above (a
 * timeout or shutdown waits for the rollback, at most ROLLBACK_WAIT_MS).
 *
 * Invariants:
 * - Exactly one outcome is taken, synchronously, by whichever of these comes
 *   first; the others find it taken and do nothing. So a handler that returns
 *   after its timeout fired records nothing, and a timed-out job is never
 *   also completed.
 * - Heartbeats (lease-keeper.ts) stop when the outcome is taken: after that
 *   the lease is recorded, released or gone. The first one is due
 *   `heartbeatIntervalMs` after the claim (`claimedAt`), not after the start.
 *   The timeout clock and `durationMs` start at `start()`.
 * - The outcome, once taken, is written by outcome-recorder.ts.
 * - `recorded` resolves once the outcome is committed (or known lost);
 *   `settled` once the handler has returned or thrown; `slotFree` once the
 *   handler has settled and the outcome is either recorded or a success
 *   queued on the completion batcher (which needs no more handler code, only
 *   a commit). The worker holds the job's handler slot until `slotFree`: a
 *   handler that ignores its aborted signal keeps its slot, so the worker
 *   never runs more handler code at once than `concurrency` allows. It holds
 *   the job's lease (counted against its lease cap, and waited for at
 *   shutdown) until both `recorded` and `settled`.
 * - Nothing here throws to the worker: every failure ends as a logged,
 *   counted outcome or a `worker:error` event.
 */
import type { Db } from '../client/types.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { MAX_ERROR_MESSAGE_LENGTH } from '../job/defaults.js';
import type { JsonValue } from '../model/json.js';
import { issuePath, type StandardSchemaV1 } from '../validation/standard-schema.js';
import { issueReason } from '../validation/parse.js';
import { toStorableJson } from '../validation/jsonified.js';
import { formatJsonPath, toStorableText } from '../validation/storable.js';
import type { AnyJobDefinition } from '../job/contract.js';
import { jobInfo, type JobInfo } from './events.js';
import { createJobContext } from '../job/context.js';
import { LazyAbortController } from './lazy-abort.js';
import { isContinuation } from '../job/continuation.js';
import { stepInputsOf } from '../job/step-inputs.js';
import type { JobSpan, JobTelemetry } from './telemetry-options.js';
import {
  JOB_OUTPUT_INVALID,
  JOB_PAYLOAD_INVALID,
  JOB_TIMEOUT,
  JOB_WORKER_SHUTDOWN,
  JobAbortedError,
  describeFailure,
  outputProblem,
  type FailureRecord,
} from '../job/errors.js';
import { withLogFields, type WorkerLogger } from '../job/logger.js';
import { confirmCompletions, leaseGranted } from './retry.js';
import { MAX_TIMER_MS } from './timing.js';
import {
  AttemptRollback,
  commitAttemptOutcome,
  handlerThrew,
  runAttemptTransaction,
  transactionalFailure,
  unspentAttemptReason,
  releasedAttemptError,
  untilAborted,
  type AttemptCommitted,
  type AttemptPhase,
} from './transactional-attempt.js';
import type { StepInputs } from '../job/contract.js';
import { LeaseKeeper, type LeaseKeeperDeps } from './lease-keeper.js';
import { isFunctionDefinition, runFunctionAttempt, type FunctionDefinition } from '../workflow/function-define.js';
import { OutcomeRecorder, type OutcomeRecorderDeps } from './outcome-recorder.js';

/** What the lease keeper and the outcome recorder need, and what the execution itself reports to. */
export interface JobExecutionDeps extends LeaseKeeperDeps, OutcomeRecorderDeps {
  logger: WorkerLogger;
  /** The worker's OpenTelemetry spans and metrics (src/telemetry/); undefined: none. */
  telemetry?: JobTelemetry;
  /** A transactional attempt was released for a database fault: the worker backs its claims off. */
  databaseFault?: () => void;
}

type Outcome = 'handler' | 'timeout' | 'lease lost' | 'shutdown' | 'released unstarted';

/** Longest wait for a transactional attempt's rollback before its timeout is recorded anyway. */
const ROLLBACK_WAIT_MS = 5_000;

export class JobExecution {
  readonly info: JobInfo;
  /** The outcome is committed, refused by the fence, or given up on. */
  readonly recorded: Promise<void>;
  /** The handler returned or threw (or never ran: invalid payload). */
  readonly settled: Promise<void>;
  /** Settled, and the outcome recorded or a success queued for the next completion batch: the handler slot is free. */
  readonly slotFree: Promise<void>;

  private readonly controller = new LazyAbortController();
  private readonly logger: WorkerLogger;
  private readonly lease: LeaseKeeper;
  private readonly outcomes: OutcomeRecorder;
  private startedAt = Date.now();
  private span: JobSpan | undefined;
  private outcome: Outcome | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private markSettled!: () => void;
  /** A transactional attempt's transaction has ended (committed or rolled back); resolved when there is none. */
  private transactionEnded: Promise<void> = Promise.resolve();

  constructor(
    private readonly job: ClaimedJob,
    private readonly definition: AnyJobDefinition,
    private readonly deps: JobExecutionDeps,
    /** When the claim was sent (`Date.now()`): the lease is at least this old. */
    private readonly claimedAt: number = Date.now(),
  ) {
    this.info = jobInfo(job);
    leaseGranted(job, claimedAt, deps.leaseSeconds);
    this.logger = withLogFields(deps.logger, { jobId: job.jobId, jobType: job.jobType, attempt: job.attempt });
    this.lease = new LeaseKeeper(job, deps, this.logger, { decided: () => this.outcome !== undefined, lost: (during) => this.loseLease(during) });
    this.outcomes = new OutcomeRecorder(job, this.info, definition.backoff, deps, this.logger, () => Date.now() - this.startedAt);
    this.recorded = this.outcomes.recorded;
    this.settled = new Promise((resolve) => (this.markSettled = resolve));
    this.slotFree = Promise.all([this.settled, Promise.race([this.recorded, this.outcomes.successQueued])]).then(() => undefined);
  }

  /** True until an outcome is taken: the job still holds a live lease this worker may release. */
  get undecided(): boolean {
    return this.outcome === undefined;
  }

  /** Starts the timers and the handler; returns at once. */
  start(): void {
    this.startedAt = Date.now();
    this.span = this.deps.telemetry?.begin(this.job, this.info);
    this.deps.events.emit('job:start', { job: this.info });
    const timeoutMs = Math.min(this.job.timeoutSeconds * 1000, MAX_TIMER_MS);
    this.timeoutTimer = setTimeout(() => this.onTimeout(), timeoutMs);
    this.lease.schedule(Math.max(0, this.deps.heartbeatIntervalMs - (this.startedAt - this.claimedAt)));
    void this.run();
  }

  /**
   * Gives back a job that was never started (it waited in the worker's
   * buffer): its lease is released (PENDING again at once, the attempt not
   * used up) and counted in `released`. Resolves when that is recorded.
   */
  async releaseUnstarted(reason: string): Promise<void> {
    if (this.take('released unstarted')) {
      this.markSettled();
      await this.outcomes.release(reason);
    }
    await this.recorded;
  }

  /**
   * The drain deadline passed: abort the handler and release the lease
   * (PENDING again at once, the attempt not used up). Resolves when the
   * outcome, this one or the one that came first, is recorded.
   */
  async shutdown(): Promise<void> {
    if (this.take('shutdown')) {
      this.controller.abort(new JobAbortedError('shutdown', 'The worker shut down before the job finished.'));
      await this.afterRollback();
      await this.outcomes.release(JOB_WORKER_SHUTDOWN);
    }
    await this.recorded;
  }

  private async run(): Promise<void> {
    let result: { ok: true; output: unknown } | { ok: false; error: unknown };
    try {
      const parsed = await this.definition.schema['~standard'].validate(this.job.payload);
      if (parsed.issues) {
        this.markSettled();
        if (this.take('handler')) await this.outcomes.failure(payloadFailure(parsed.issues), parsed.issues);
        return;
      }
      // The claim statement read the step's inputs (src/job/step-inputs.ts): no round trip here.
      const stepInputs = stepInputsOf(this.job);
      const deadline = new Date(this.startedAt + this.job.timeoutSeconds * 1000);
      if (this.definition.transaction) {
        await this.runTransactional(parsed.value, stepInputs, deadline);
        return;
      }
      const ctx = createJobContext(this.job, this.controller, this.logger, this.lease.contextWrites(), stepInputs, deadline);
      // A durable function's body needs the worker's database and this lease (src/workflow/function-define.ts).
      const handler = isFunctionDefinition(this.definition)
        ? () => runFunctionAttempt(this.definition as FunctionDefinition, parsed.value, ctx, this.deps.db, this.job)
        : () => this.definition.handler(parsed.value, ctx);
      // Inside the execution's span (when traced), so spans the handler opens are its children.
      result = { ok: true, output: await (this.span ? this.span.run(handler) : handler()) };
    } catch (error) {
      result = { ok: false, error };
    }
    this.markSettled();
    if (!this.take('handler')) {
      this.logger.debug('handler settled after its outcome was decided; its result is discarded', { outcome: this.outcome });
      return;
    }
    if (!result.ok) {
      await this.outcomes.failure(describeFailure(result.error), result.error);
      return;
    }
    if (isContinuation(result.output)) {
      await this.outcomes.continuation(result.output);
      return;
    }
    // The handler's side effects have happened: an output that is not plain JSON (Dates, toJSON, undefined
    // members) is stored as JSON.stringify writes it rather than refused; only what JSON cannot hold fails.
    const storable = toStorableJson(result.output);
    if (!storable.ok) {
      const problem = outputProblem(storable.problem);
      await this.outcomes.failure({ code: JOB_OUTPUT_INVALID, message: toStorableText(problem, MAX_ERROR_MESSAGE_LENGTH), retryable: false }, result.output);
      return;
    }
    await this.outcomes.success(storable.value as JsonValue | undefined);
  }

  /** Takes the outcome if nobody has; stops the timers when it does. */
  private take(outcome: Outcome): boolean {
    if (this.outcome !== undefined) return false;
    this.outcome = outcome;
    clearTimeout(this.timeoutTimer);
    this.lease.stop();
    return true;
  }

  private onTimeout(): void {
    if (!this.take('timeout')) return;
    const reason = new JobAbortedError('timeout', `The job did not finish within its timeout of ${this.job.timeoutSeconds} s.`);
    this.controller.abort(reason);
    // A transactional attempt's writes are rolled back first (the abort ends its transaction), then the timeout recorded.
    void this.afterRollback().then(() => this.outcomes.failure({ code: JOB_TIMEOUT, message: reason.message, retryable: true }, reason));
  }

  /** Resolves once a transactional attempt's transaction has ended, or after ROLLBACK_WAIT_MS. */
  private async afterRollback(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.transactionEnded, new Promise<void>((resolve) => (timer = setTimeout(resolve, ROLLBACK_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /**
   * A transactional job type: the handler and its success (or continuation)
   * in one transaction of the host's client (transactional-attempt.ts).
   * Whoever takes the outcome first decides, as for every job: the handler
   * only by returning in time, and then the commit is the outcome; a timeout,
   * a lost lease or a shutdown aborts the signal, which rolls the
   * transaction back at once, even if the handler ignores the signal.
   */
  private async runTransactional(payload: unknown, stepInputs: StepInputs | undefined, deadline: Date): Promise<void> {
    const signal = this.controller.signal;
    if (this.outcome !== undefined) {
      // Timed out (or the lease was lost) while the payload was validated: no transaction to open.
      this.markSettled();
      return;
    }
    let phase: AttemptPhase = 'opening';
    /** What the transaction reached before COMMIT: reported if the COMMIT's lost answer turns out to have been a commit. */
    let reached: AttemptCommitted | undefined;
    const attempt = runAttemptTransaction(this.definition.transaction!, deadline.getTime(), async (tx) => {
      // Decided while the transaction waited for a connection: the handler never runs.
      if (signal.aborted) throw signal.reason;
      const ctx = createJobContext(this.job, this.controller, this.logger, this.lease.contextWrites(), stepInputs, deadline, tx);
      const call = () => this.definition.handler(payload, ctx);
      phase = 'handler';
      const running = Promise.resolve().then(() => (this.span ? this.span.run(call) : call()));
      void running.then(this.markSettled, this.markSettled);
      const output = await untilAborted(running, signal).catch((error: unknown) => handlerThrew(tx as Db, error, signal));
      // Taken synchronously with the return: a timeout or lost lease after this point finds the outcome taken.
      if (!this.take('handler')) throw signal.reason;
      phase = 'commit';
      reached = await commitAttemptOutcome(tx as Db, this.job, output);
      return reached;
    });
    this.transactionEnded = attempt.then(
      () => undefined,
      () => undefined,
    );
    let committed: AttemptCommitted;
    try {
      committed = await attempt;
    } catch (error) {
      if (phase === 'opening') this.markSettled();
      await this.recordRolledBack(error, phase, reached, deadline.getTime());
      return;
    }
    this.outcomes.committed(committed);
  }

  /**
   * The attempt's transaction ended without COMMIT (or its COMMIT's answer was
   * lost). Records what happened, now that its writes are rolled back.
   */
  private async recordRolledBack(error: unknown, phase: AttemptPhase, reached: AttemptCommitted | undefined, deadline: number): Promise<void> {
    if (phase !== 'commit' && !this.take('handler')) {
      // A timeout, lost lease or shutdown took the outcome and aborted the transaction: it records.
      this.logger.debug('transactional attempt rolled back after its outcome was decided', { outcome: this.outcome });
      return;
    }
    if (error instanceof AttemptRollback) {
      if (error.failure === 'lease lost') {
        await this.outcomes.reportLeaseLost('complete');
        this.outcomes.done();
      } else {
        await this.outcomes.failure(error.failure, error.detail);
      }
      return;
    }
    if (reached?.kind === 'succeeded') {
      // Failed after the completion statement: a lost COMMIT answer may hide a commit.
      const [confirmed] = await confirmCompletions(this.deps.db, [this.job], [{ jobId: this.job.jobId, outcome: 'lease_owner_mismatch' }]);
      if (confirmed?.outcome === 'succeeded') {
        this.outcomes.committed(reached);
        return;
      }
    }
    const unspent = unspentAttemptReason(error, phase, deadline);
    if (unspent !== undefined) {
      // A database fault, not the handler's: the attempt is given back (its writes were rolled back) and re-runs.
      this.logger.warn('transactional attempt ended by a database fault; releasing it without using up the attempt', {
        phase,
        reason: unspent,
        error: releasedAttemptError(error),
      });
      this.deps.databaseFault?.();
      await this.outcomes.release(unspent);
      return;
    }
    await this.outcomes.failure(transactionalFailure(error, this.job.timeoutSeconds, deadline), error);
  }

  /** A heartbeat or a handler's fenced write was refused: the lease is lost, the handler aborted, nothing recorded. */
  private async loseLease(during: 'heartbeat' | 'save'): Promise<void> {
    if (!this.take('lease lost')) return;
    // One read first (this path is rare), so the handler's signal says why: canceled, or lost to another attempt.
    const canceled = await this.outcomes.lostToCancel();
    this.controller.abort(
      canceled ? new JobAbortedError('canceled', 'The job was canceled.') : new JobAbortedError('lease lost', 'The job is no longer leased to this worker.'),
    );
    await this.outcomes.reportLeaseLost(during, canceled);
    this.outcomes.done();
  }
}

/** The schema's first issue, named like runledger names fields: `payload.amount`. */
function payloadFailure(issues: ReadonlyArray<StandardSchemaV1.Issue>): FailureRecord {
  const issue = issues[0];
  const field = formatJsonPath(['payload', ...(issue ? issuePath(issue) : []).map(String)]);
  // The schema's messages are the host's text: recorded sanitised, never refused.
  return {
    code: JOB_PAYLOAD_INVALID,
    message: toStorableText(`Invalid ${field}: ${issueReason(issue?.message ?? '')}`, MAX_ERROR_MESSAGE_LENGTH),
    retryable: false,
  };
}
