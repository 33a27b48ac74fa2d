/**
 * One attempt of a durable function's body (docs/concepts/durable-functions.md):
 * the `ctx` its body gets, which replays recorded steps, runs and records new
 * ones, and asks to suspend for a sleep. Every call takes the next call index
 * synchronously, when the body makes it, so parallel steps keep their call
 * order whatever order they finish in.
 */
import { setMaxListeners } from 'node:events';
import { z } from 'zod';
import { readCommittedIsolation } from '../client/transaction.js';
import type { Db, PrismaClientLike } from '../client/types.js';
import { ConflictError, isRunledgerError, UnavailableError, ValidationError, type RunledgerError } from '../errors/runledger-error.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import type { AnyJobDefinition, JobContext, JobOutput, JobPayload } from '../job/contract.js';
import { JOB_OUTPUT_INVALID, TerminalError, outputProblem } from '../job/errors.js';
import type { WorkerLogger } from '../job/logger.js';
import type { JsonValue } from '../model/json.js';
import type { Jsonified } from '../validation/jsonified.js';
import { toStorableJson } from '../validation/jsonified.js';
import { parseInput } from '../validation/parse.js';
import { textProblem } from '../validation/storable.js';
import { MAX_TIMER_MS, MAX_TIMESTAMP, MIN_TIMESTAMP, nonBlank, positiveInt, timerMs } from '../validation/primitives.js';
import { newId } from '../db/ids.js';
import { announceStepChange, recordFunctionStep, type FunctionRecord, type RecordedFunctionStep } from './function-statements.js';
import { recordThroughBatch } from './function-record-batch.js';
import { openSignalWait, timeOutSignalWait } from './function-wait-statements.js';
import { readChildRun, recordChildOutcome, startChildRun } from './function-child.js';
import { workflow, type TypedWorkflowRunInput } from './builder.js';
import type { WorkflowRunInput } from './run-definition.js';

export const FUNCTION_INVALID_STEP = 'workflow.invalid_function_step';
export const FUNCTION_NONDETERMINISTIC = 'workflow.function_nondeterministic';
export const FUNCTION_STEP_TIMEOUT = 'workflow.function_step_timeout';
export const FUNCTION_CHILD_FAILED = 'workflow.child_failed';
export const FUNCTION_CHILD_CANCELED = 'workflow.child_canceled';
const LEASE_OWNER_MISMATCH = 'job.lease_owner_mismatch';

/** The key of the step that runs the body (the run's result step), and of a sleep. `$` is refused in names. */
const SLEEP_KEY = '$sleep';
/** The key prefix of a signal wait's step (`$signal:<name>`, `$signal:<name>#2`, ...). */
const SIGNAL_KEY = '$signal:';
/** The key prefix of a child run's step (`$child:<name>`). */
const CHILD_KEY = '$child:';
/** A woken-late parent's fallback: the child's end wakes it at once; this poll only backs that up. */
const CHILD_FALLBACK_POLL_MS = 5 * 60_000;

/** The step key base of a wait for the signal `name`. */
export function signalWaitKey(name: string): string {
  return `${SIGNAL_KEY}${name}`;
}

/** A step recorded without its notification is announced within this (the dashboard coalesces events by 250 ms). */
const ANNOUNCE_MS = 250;

/** The longest `sleep`: ten years. */
const MAX_SLEEP_MS = 10 * 365 * 24 * 3_600_000;

/** What a step's `fn` is given. */
export interface FunctionStepInfo {
  /** Aborted when the step times out (`timeoutMs`) or the attempt is aborted (job timeout, lost lease, shutdown). */
  readonly signal: AbortSignal;
  /** 1-based attempt of this step within this execution of the body. */
  readonly attempt: number;
  /** Stable for this step of this run (`runledger:<runId>:<stepKey>`): give it to an API that deduplicates. */
  readonly idempotencyKey: string;
}

/** A step's own retries and timeout, inside the attempt that runs it. */
export interface FunctionStepSettings {
  retry?: {
    /** Tries of `fn` before its last error is thrown into the body. Default 1 (no retry). */
    maxAttempts?: number;
    /** Delay before the second try, doubling up to `maxDelayMs`. Defaults 500 and 30,000. */
    baseDelayMs?: number;
    maxDelayMs?: number;
  };
  /** Each try of `fn` is aborted after this many ms (`workflow.function_step_timeout`, retried like any error). */
  timeoutMs?: number;
}

/** What a step returns: its value as stored (JSON), on the first run and on every replay alike. */
export type FunctionStepResult<R> = Jsonified<Awaited<R>> | (undefined extends Awaited<R> ? null : never);

/** `ctx` of a durable function's body. */
export interface FunctionContext {
  readonly workflowRunId: string;
  /** The run's organization; null: none. */
  readonly organizationId: string | null;
  /** 1-based attempt of the body within its current slice (a sleep's wake-up starts a new slice). */
  readonly attempt: number;
  /** Aborted when the attempt times out, loses its lease or the worker shuts down. */
  readonly signal: AbortSignal;
  readonly logger: WorkerLogger;
  /**
   * Runs `fn` once and records its output (JSON); on a re-execution returns the recorded output without
   * calling `fn`. `name`: non-blank, at most 200 characters, no `#`, not starting with `$`; a repeated name
   * is recorded as `name#2`, `name#3`, ...
   */
  step<R>(name: string, fn: (step: FunctionStepInfo) => R, settings?: FunctionStepSettings): Promise<FunctionStepResult<R>>;
  /** Ends the attempt until `ms` (an integer, 0 to ten years) from now on the database clock; holds no worker slot. */
  sleep(ms: number): Promise<void>;
  /** Ends the attempt until `until`; returns at once once it has passed. */
  sleepUntil(until: Date): Promise<void>;
  /**
   * Waits for the signal `name` (sent by `signal(db, runId, name, payload)`), holding no worker slot: takes
   * the oldest signal of that name not yet taken (one sent before the wait is kept for it), else ends the
   * attempt until one is sent (which wakes the function at once) or `timeoutMs` passes. The outcome is
   * recorded: a re-execution returns the same payload or the same timeout. `name` follows the step name rule.
   */
  waitForSignal<T extends JsonValue = JsonValue>(name: string, options?: SignalWaitOptions): Promise<SignalWaitResult<T>>;
  /**
   * Starts a child run once (a re-execution finds it recorded) in the run's organization and waits for it,
   * holding no worker slot: returns its result (the result step's output; null without one), or throws
   * `workflow.child_failed` / `workflow.child_canceled` (the body may catch it). The child's end wakes the
   * function at once. `child`: a durable function's `fn.run(input)`, a workflow run (`workflow(...).build()`),
   * or `{ job: definition, payload }` (a one-step run of that job, its output the result).
   */
  invoke<R>(name: string, child: TypedWorkflowRunInput<R>): Promise<R>;
  invoke<D extends AnyJobDefinition>(name: string, child: { job: D; payload: JobPayload<D> }): Promise<JobOutput<D>>;
}

/** Options of `ctx.waitForSignal`. */
export interface SignalWaitOptions {
  /** How long to wait (ms, 0 to ten years; 0 takes only a signal already sent). Default: no timeout. */
  timeoutMs?: number;
}

/** What `ctx.waitForSignal` returns: the signal's payload, or that the timeout passed first. */
export type SignalWaitResult<T = JsonValue> = { status: 'received'; payload: T; signalId: string } | { status: 'timed_out' };

/** `ctx` of a function defined with `transaction: prisma`: `T` is that client's transaction client. */
export interface TransactionalFunctionContext<T> extends FunctionContext {
  /**
   * As `step`, with `fn` inside a transaction of the definition's `transaction` client: its writes commit
   * with the step's record, exactly once. `fn` returns JSON (what is recorded and replayed).
   */
  transactionalStep<R extends JsonValue>(name: string, fn: (tx: T, step: FunctionStepInfo) => Promise<R> | R, settings?: FunctionStepSettings): Promise<R>;
  /** A transactional step that returns nothing: recorded with no output, replayed as null. */
  transactionalStep(name: string, fn: (tx: T, step: FunctionStepInfo) => Promise<void> | void, settings?: FunctionStepSettings): Promise<null>;
}

/** Thrown through the body by a sleep that is not due yet; the attempt then ends with a continuation. */
class FunctionSuspended extends Error {
  constructor() {
    super('The durable function is suspended until its sleep is due or its signal arrives.');
    this.name = 'FunctionSuspended';
  }
}

const nameSchema = nonBlank(200)
  .refine((name) => !name.includes('#'), 'must not contain #')
  .refine((name) => !name.startsWith('$'), 'must not start with $ (reserved)');

/** A signal's name: as a step's. */
export const signalNameSchema = nameSchema;

const signalWaitSchema = z.object({
  name: nameSchema,
  options: z.strictObject({
    timeoutMs: z
      .number()
      .int('must be an integer number of milliseconds')
      .min(0, 'must not be negative')
      .max(MAX_SLEEP_MS, 'must be at most ten years')
      .optional(),
  }),
});

const stepSettingsSchema = z.strictObject({
  retry: z.strictObject({ maxAttempts: positiveInt.max(1_000).optional(), baseDelayMs: timerMs.optional(), maxDelayMs: timerMs.optional() }).optional(),
  timeoutMs: positiveInt.max(MAX_TIMER_MS).optional(),
});

const stepCallSchema: z.ZodType<StepCall> = z.object({ name: nameSchema, settings: stepSettingsSchema.optional() });
interface StepCall {
  name: string;
  settings?: FunctionStepSettings | undefined;
}
const sleepSchema: z.ZodType<{ ms: number }> = z.object({
  ms: z.number().int('must be an integer number of milliseconds').min(0, 'must not be negative').max(MAX_SLEEP_MS, 'must be at most ten years'),
});
const sleepUntilSchema: z.ZodType<{ until: Date }> = z.object({
  until: z.date({ error: 'must be a Date' }).min(MIN_TIMESTAMP, 'must be in years 1 to 9999').max(MAX_TIMESTAMP, 'must be in years 1 to 9999'),
});

interface Call {
  /** The step row's id, issued now so the rows' id order is the call order. */
  id: string;
  index: number;
  key: string;
  recorded: RecordedFunctionStep | undefined;
}

export interface FunctionAttemptDeps {
  db: Db;
  lease: ClaimedJob;
  job: JobContext;
  workflowRunId: string;
  record: FunctionRecord;
  transaction: PrismaClientLike | undefined;
}

export class FunctionAttempt {
  readonly context: TransactionalFunctionContext<unknown>;
  /** Set once a call diverged from the record: the attempt fails with it, whatever the body does. */
  diverged: RunledgerError | undefined;
  /** The earliest wake time (database clock, ms) a sleep asked to suspend until. */
  suspendUntil: number | undefined;

  private nextIndex = 0;
  private readonly occurrences = new Map<string, number>();
  private readonly byIndex = new Map<number, RecordedFunctionStep>();
  private readonly indexByKey = new Map<string, number>();
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Database clock minus local clock, from the attempt's first read. */
  private readonly clockOffset: number;
  /** Set while a step recorded without its notification waits to be announced. */
  private announceTimer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: FunctionAttemptDeps) {
    for (const step of deps.record.steps) {
      this.byIndex.set(step.callIndex, step);
      this.indexByKey.set(step.stepKey, step.callIndex);
    }
    this.clockOffset = deps.record.dbNow - Date.now();
    const job = deps.job;
    const context = {
      workflowRunId: deps.workflowRunId,
      organizationId: job.organizationId,
      attempt: job.attempt,
      get signal() {
        return job.signal;
      },
      logger: job.logger,
      step: (name: string, fn: (step: FunctionStepInfo) => unknown, settings?: FunctionStepSettings) => this.step(name, fn, settings, false),
      transactionalStep: (name: string, fn: (tx: unknown, step: FunctionStepInfo) => unknown, settings?: FunctionStepSettings) =>
        this.step(name, fn, settings, true),
      sleep: (ms: number) => this.sleep(ms),
      sleepUntil: (until: Date) => this.sleepUntil(until),
      waitForSignal: (name: string, options?: SignalWaitOptions) => this.waitForSignal(name, options),
      invoke: (name: string, child: unknown) => this.invoke(name, child),
    } as unknown as TransactionalFunctionContext<unknown>;
    this.context = Object.freeze(context);
  }

  /** Resolves once every step started in this attempt has settled (recorded or failed). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * At the attempt's end: a completion announces its run itself (run-status.ts), so a pending announcement
   * is dropped; any other end (a sleep's continuation, a failure) sends it now.
   */
  async endAnnouncements(completes: boolean): Promise<void> {
    if (this.announceTimer === undefined) return;
    clearTimeout(this.announceTimer);
    this.announceTimer = undefined;
    if (!completes) await this.announce();
  }

  /** A step was recorded without the run's step-changed notification: send one within ANNOUNCE_MS. */
  private recordedSilently(): void {
    if (this.announceTimer !== undefined) return;
    this.announceTimer = setTimeout(() => {
      this.announceTimer = undefined;
      void this.announce();
    }, ANNOUNCE_MS);
    this.announceTimer.unref();
  }

  private async announce(): Promise<void> {
    try {
      await announceStepChange(this.deps.db, this.deps.workflowRunId);
    } catch (error) {
      this.deps.job.logger.warn('function step notification failed (the dashboard sees the step on its next poll)', { error });
    }
  }

  /** After the body returned: a recorded step it never reached is a divergence too. */
  unreached(): RunledgerError | undefined {
    const missed = [...this.byIndex.values()].filter((step) => step.callIndex >= this.nextIndex).sort((a, b) => a.callIndex - b.callIndex)[0];
    if (!missed) return undefined;
    return nondeterministic(missed.callIndex, missed.stepKey, null);
  }

  /** Database clock now (ms), as estimated from the attempt's first read. */
  dbNow(): number {
    return Date.now() + this.clockOffset;
  }

  private step(name: string, fn: unknown, settings: FunctionStepSettings | undefined, transactional: boolean): Promise<unknown> {
    // Validation and the call index are synchronous: the index is the order of the calls, not of their completion.
    // The common call (a plain valid name, no settings) skips zod: it runs once per step, on the hot path.
    const parsed: StepCall = settings === undefined && plainName(name) ? { name } : parseInput(stepCallSchema, { name, settings }, FUNCTION_INVALID_STEP);
    if (typeof fn !== 'function') throw new ValidationError(FUNCTION_INVALID_STEP, 'fn', 'Invalid fn: must be a function');
    if (transactional && !this.deps.transaction) {
      throw new ValidationError(
        FUNCTION_INVALID_STEP,
        'transaction',
        'Invalid transaction: a transactional step needs the definition to be given { transaction: prisma } (your root client)',
      );
    }
    const call = this.claim(parsed.name);
    if (call.recorded) return Promise.resolve(call.recorded.output);
    return this.track(this.execute(call, fn as (...args: unknown[]) => unknown, parsed.settings ?? {}, transactional));
  }

  private sleep(ms: number): Promise<void> {
    const parsed: { ms: number } = parseInput(sleepSchema, { ms }, FUNCTION_INVALID_STEP);
    return this.suspendFor({ delayMs: parsed.ms });
  }

  private sleepUntil(until: Date): Promise<void> {
    const parsed: { until: Date } = parseInput(sleepUntilSchema, { until }, FUNCTION_INVALID_STEP);
    return this.suspendFor({ until: parsed.until });
  }

  private async suspendFor(sleep: { delayMs: number } | { until: Date }): Promise<void> {
    const call = this.claim(null);
    let wakeAt: number;
    if (call.recorded) {
      wakeAt = wakeTime(call.recorded.output);
    } else {
      const recording = recordFunctionStep(
        this.deps.db,
        {
          lease: this.deps.lease,
          workflowRunId: this.deps.workflowRunId,
          step: { id: call.id, stepKey: call.key, callIndex: call.index, output: undefined, elapsedMs: 0, sleep },
        },
        true,
      );
      const recorded = await this.track(recording);
      wakeAt = wakeTime(recorded.output);
      if (wakeAt <= recorded.at.getTime()) return;
    }
    if (wakeAt <= this.dbNow()) return;
    this.suspendUntil = Math.min(this.suspendUntil ?? Number.POSITIVE_INFINITY, wakeAt);
    throw new FunctionSuspended();
  }

  /**
   * A signal wait: a recorded outcome replays; an open wait not yet due suspends without a statement (a
   * signal that resolves it wakes the body: the job's continuation, or its due time, is brought forward);
   * otherwise one transaction opens the wait (taking a mailbox signal) or records its timeout.
   */
  private async waitForSignal(name: string, options: SignalWaitOptions | undefined): Promise<SignalWaitResult<JsonValue>> {
    const parsed: { name: string; options: SignalWaitOptions } = parseInput(signalWaitSchema, { name, options: options ?? {} }, FUNCTION_INVALID_STEP);
    const call = this.claim(signalWaitKey(parsed.name));
    let output: JsonValue | null;
    if (call.recorded) {
      output = call.recorded.output;
      const open = signalOutcome(output);
      if (open === undefined) {
        const timeoutAt = signalTimeoutAt(output);
        if (timeoutAt === null || timeoutAt > this.dbNow()) return this.suspendWait(timeoutAt);
        output = await this.track(timeOutSignalWait(this.deps.db, this.deps.lease, { workflowRunId: this.deps.workflowRunId, stepKey: call.key }));
      }
    } else {
      const opened = this.track(
        openSignalWait(this.deps.db, this.deps.lease, {
          id: call.id,
          workflowRunId: this.deps.workflowRunId,
          stepKey: call.key,
          callIndex: call.index,
          name: parsed.name,
          timeoutMs: parsed.options.timeoutMs ?? null,
        }),
      );
      output = (await opened).output;
    }
    const outcome = signalOutcome(output);
    if (outcome === undefined) return this.suspendWait(signalTimeoutAt(output));
    return outcome;
  }

  /**
   * A child run: started and recorded once (function-child.ts); a recorded outcome replays; a child that
   * has ended gets its outcome recorded; otherwise the attempt suspends until the child's end wakes it.
   */
  private async invoke(name: string, child: unknown): Promise<unknown> {
    const parsed: { name: string } = parseInput(invokeSchema, { name }, FUNCTION_INVALID_STEP);
    const input = childRunInput(child);
    const call = this.claim(`${CHILD_KEY}${parsed.name}`);
    const step = { workflowRunId: this.deps.workflowRunId, stepKey: call.key };
    let output: JsonValue | null;
    if (call.recorded) {
      output = call.recorded.output;
    } else {
      const start = { ...step, id: call.id, callIndex: call.index, child: input };
      output = await this.track(startChildRun(this.deps.db, this.deps.lease, start));
    }
    let outcome = childOutcome(output);
    if (outcome === undefined) {
      const state = await this.track(readChildRun(this.deps.db, childRunIdOf(output)));
      const ended = childEnded(state);
      if (ended === undefined) return this.suspendWait(this.dbNow() + CHILD_FALLBACK_POLL_MS);
      outcome = childOutcome(await this.track(recordChildOutcome(this.deps.db, this.deps.lease, step, ended)))!;
    }
    if (outcome.outcome === 'succeeded') return outcome.result ?? null;
    const details = { stepKey: call.key, childRunId: childRunIdOf(output), status: outcome.status ?? null, statusReason: outcome.statusReason ?? null };
    if (outcome.outcome === 'canceled') throw new ConflictError(FUNCTION_CHILD_CANCELED, `Child run ${call.key} was canceled.`, { details });
    throw new ConflictError(FUNCTION_CHILD_FAILED, `Child run ${call.key} ended with errors.`, { details });
  }

  private suspendWait(timeoutAt: number | null): never {
    this.suspendUntil = Math.min(this.suspendUntil ?? Number.POSITIVE_INFINITY, timeoutAt ?? Number.POSITIVE_INFINITY);
    throw new FunctionSuspended();
  }

  /** The next call index and its key; compares them with the record (throws on a divergence). */
  private claim(name: string | null): Call {
    if (this.diverged) throw this.diverged;
    if (this.suspendUntil !== undefined) throw new FunctionSuspended();
    const base = name ?? SLEEP_KEY;
    const occurrence = (this.occurrences.get(base) ?? 0) + 1;
    this.occurrences.set(base, occurrence);
    const key = occurrence === 1 ? base : `${base}#${occurrence}`;
    const index = this.nextIndex++;
    const recorded = this.byIndex.get(index);
    if (recorded && recorded.stepKey !== key) throw this.diverge(nondeterministic(index, recorded.stepKey, key));
    if (!recorded && this.indexByKey.has(key)) throw this.diverge(nondeterministic(this.indexByKey.get(key)!, key, null, index));
    return { id: newId(), index, key, recorded };
  }

  private diverge(error: RunledgerError): RunledgerError {
    this.diverged ??= error;
    return error;
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const done = () => this.inFlight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  private async execute(call: Call, fn: (...args: unknown[]) => unknown, settings: FunctionStepSettings, transactional: boolean): Promise<JsonValue | null> {
    const maxAttempts = settings.retry?.maxAttempts ?? 1;
    const baseDelayMs = settings.retry?.baseDelayMs ?? 500;
    const maxDelayMs = Math.max(baseDelayMs, settings.retry?.maxDelayMs ?? 30_000);
    const idempotencyKey = `runledger:${this.deps.workflowRunId}:${call.key}`;
    for (let attempt = 1; ; attempt++) {
      this.deps.job.signal.throwIfAborted();
      const started = Date.now();
      try {
        let recorded: JsonValue | null;
        if (transactional) {
          recorded = await this.runTransactional(call, fn, settings.timeoutMs, { attempt, idempotencyKey }, started);
        } else {
          const output = storable(await this.withTimeout(settings.timeoutMs, call.key, (signal) => fn({ signal, attempt, idempotencyKey })));
          recorded = await this.record(undefined, call, output, started);
        }
        // Committed (a transactional step's with the host's writes): announce it, batched with its neighbours.
        this.recordedSilently();
        return recorded;
      } catch (error) {
        if (isRunledgerError(error, LEASE_OWNER_MISMATCH) || error instanceof TerminalError || attempt >= maxAttempts) throw error;
        this.deps.job.logger.warn('function step failed; retrying', { stepKey: call.key, attempt, error });
        await delay(Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)), this.deps.job.signal);
      }
    }
  }

  /** The step's `fn` and its record in one transaction of the host's client: both commit or neither. */
  private async runTransactional(
    call: Call,
    fn: (...args: unknown[]) => unknown,
    timeoutMs: number | undefined,
    info: { attempt: number; idempotencyKey: string },
    started: number,
  ): Promise<JsonValue | null> {
    const client = this.deps.transaction!;
    const remaining = Math.max(1, Math.min(timeoutMs ?? MAX_TIMER_MS, this.deps.job.remainingMs()));
    const isolation = await readCommittedIsolation(client, 'open a transactional function step');
    return client.$transaction(
      async (tx: unknown) => {
        const output = storable(await this.withTimeout(timeoutMs, call.key, (signal) => fn(tx, { signal, ...info })));
        return this.record(tx as Db, call, output, started);
      },
      { ...isolation, maxWait: Math.min(remaining, 10_000), timeout: remaining },
    );
  }

  /**
   * Records a finished step: a transactional one in its own transaction (`db` is that transaction), a plain
   * one through the client's shared record batch (function-record-batch.ts).
   */
  private async record(db: Db | undefined, call: Call, output: JsonValue | undefined, started: number): Promise<JsonValue | null> {
    const item = {
      lease: this.deps.lease,
      workflowRunId: this.deps.workflowRunId,
      step: { id: call.id, stepKey: call.key, callIndex: call.index, output, elapsedMs: Date.now() - started },
    };
    const recorded = db === undefined ? await recordThroughBatch(this.deps.db, item) : await recordFunctionStep(db, item, false);
    return recorded.output;
  }

  /** Runs `fn` with a signal aborted at `timeoutMs` or with the attempt's; a timeout rejects at once. */
  private async withTimeout<R>(timeoutMs: number | undefined, stepKey: string, fn: (signal: AbortSignal) => R): Promise<Awaited<R>> {
    const outer = this.deps.job.signal;
    // Without a timeout the attempt's signal is the step's: no listener per step (twenty parallel steps would
    // pass Node's ten-listener warning on it, and cost a controller each).
    if (timeoutMs === undefined) return await Promise.resolve().then(() => fn(outer));
    const controller = new AbortController();
    // Parallel steps with timeouts each listen to the attempt's signal while they run: as many as the body starts.
    setMaxListeners(0, outer);
    const onAbort = () => controller.abort(outer.reason);
    outer.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      const running = Promise.resolve().then(() => fn(controller.signal));
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new UnavailableError(FUNCTION_STEP_TIMEOUT, `Step ${stepKey} did not finish within ${timeoutMs} ms.`, {
            details: { stepKey, timeoutMs },
          });
          controller.abort(error);
          reject(error);
        }, timeoutMs);
      });
      running.catch(() => undefined);
      return await Promise.race([running, timedOut]);
    } finally {
      clearTimeout(timer);
      outer.removeEventListener('abort', onAbort);
    }
  }
}

/** The name rule of `nameSchema`, without zod: a string, non-blank, at most 200 characters, no `#`, no leading `$`. */
function plainName(name: unknown): name is string {
  return (
    typeof name === 'string' && name.length <= 200 && name.trim().length > 0 && !name.includes('#') && !name.startsWith('$') && textProblem(name) === undefined
  );
}

function nondeterministic(index: number, recorded: string, called: string | null, calledAt?: number): ConflictError {
  const message =
    called === null
      ? calledAt === undefined
        ? `The function returned without reaching its recorded step ${recorded} (call ${index}): its code changed while the run was in flight.`
        : `Step ${recorded} was recorded as call ${index} but is now call ${calledAt}: the function's code changed while the run was in flight.`
      : `Call ${index} was recorded as step ${recorded} but is now step ${called}: the function's code changed while the run was in flight.`;
  return new ConflictError(FUNCTION_NONDETERMINISTIC, message, { details: { callIndex: calledAt ?? index, recorded, called } });
}

function storable(value: unknown): JsonValue | undefined {
  const result = toStorableJson(value);
  if (!result.ok) throw new TerminalError(outputProblem(result.problem), { code: JOB_OUTPUT_INVALID });
  return result.value as JsonValue | undefined;
}

function wakeTime(output: JsonValue | null): number {
  const at = output !== null && typeof output === 'object' && !Array.isArray(output) ? output.wakeAt : undefined;
  const ms = typeof at === 'string' ? Date.parse(at) : Number.NaN;
  if (Number.isNaN(ms)) throw new ConflictError(FUNCTION_NONDETERMINISTIC, 'A recorded sleep has no wake time.', { details: { output } });
  return ms;
}

const invokeSchema = z.object({ name: nameSchema });

/** What `ctx.invoke` was given, as a workflow run's input; the run's own checks apply when it is enqueued. */
function childRunInput(child: unknown): WorkflowRunInput {
  if (child !== null && typeof child === 'object' && 'job' in child) {
    const { job, payload } = child as { job: unknown; payload?: unknown };
    const jobType = (job as { jobType?: unknown } | null)?.jobType;
    if (typeof jobType !== 'string') throw new ValidationError(FUNCTION_INVALID_STEP, 'child.job', 'Invalid child.job: must be a job definition');
    // Untyped here (the overload of `invoke` types it): the builder still checks the payload with the schema.
    const builder = workflow(jobType) as unknown as {
      job(key: string, definition: unknown, payload: unknown): { resultStep(key: string): { build(): WorkflowRunInput } };
    };
    return builder.job('job', job, payload).resultStep('job').build();
  }
  if (child === null || typeof child !== 'object' || typeof (child as { workflowType?: unknown }).workflowType !== 'string') {
    throw new ValidationError(
      FUNCTION_INVALID_STEP,
      'child',
      'Invalid child: must be a workflow run (fn.run(input), workflow(...).build()) or { job, payload }',
    );
  }
  return child as WorkflowRunInput;
}

type ChildOutcome = { outcome: 'succeeded' | 'failed' | 'canceled'; result?: JsonValue; status?: string; statusReason?: string | null };

function childOutcome(output: JsonValue | null): ChildOutcome | undefined {
  const record = output as { outcome?: unknown } | null;
  return typeof record?.outcome === 'string' ? (record as unknown as ChildOutcome) : undefined;
}

function childRunIdOf(output: JsonValue | null): string {
  const id = (output as { childRunId?: unknown } | null)?.childRunId;
  if (typeof id !== 'string') throw new ConflictError(FUNCTION_NONDETERMINISTIC, 'A recorded child run has no id.', { details: { output } });
  return id;
}

/** The outcome to record for a child that has ended (or is gone); undefined while it runs. */
function childEnded(state: { status: string; result: JsonValue | null; statusReason: string | null } | null): { [key: string]: JsonValue } | undefined {
  if (state === null) return { outcome: 'canceled', status: 'PURGED', statusReason: null };
  if (state.status === 'SUCCEEDED') return { outcome: 'succeeded', result: state.result };
  if (state.status === 'COMPLETED_WITH_ERRORS') return { outcome: 'failed', status: state.status, statusReason: state.statusReason };
  if (state.status === 'CANCELED') return { outcome: 'canceled', status: state.status, statusReason: state.statusReason };
  return undefined;
}

/** A wait's recorded outcome; undefined while it is open. */
function signalOutcome(output: JsonValue | null): SignalWaitResult<JsonValue> | undefined {
  const record = output !== null && typeof output === 'object' && !Array.isArray(output) ? output : undefined;
  if (record?.outcome === 'received') return { status: 'received', payload: record.payload ?? null, signalId: String(record.signalId) };
  if (record?.outcome === 'timeout') return { status: 'timed_out' };
  if (record === undefined || !('timeoutAt' in record)) {
    throw new ConflictError(FUNCTION_NONDETERMINISTIC, 'A recorded signal wait has no outcome nor timeout.', { details: { output } });
  }
  return undefined;
}

/** A wait's timeout (database clock, ms); null: none. */
function signalTimeoutAt(output: JsonValue | null): number | null {
  const at = (output as { timeoutAt?: unknown } | null)?.timeoutAt;
  return typeof at === 'string' ? Date.parse(at) : null;
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function isFunctionSuspended(error: unknown): boolean {
  return error instanceof FunctionSuspended;
}
