/**
 * What a handler throws to say how its failure should be recorded, and how
 * any throw becomes the `failJob` options.
 *
 *   RetryableError  -> retried (exponential backoff, never before `retryNotBefore`)
 *                      until `max_attempts`, then DEAD_LETTERED
 *   TerminalError   -> DEAD_LETTERED now, whatever attempts are left
 *   anything else   -> retryable, code `job.handler_error`
 *
 * These are plain `Error` subclasses, not RunledgerErrors: a RunledgerError is
 * something runledger reports to its caller (with a category and a client-safe
 * message); these travel the other way, from the host's handler to runledger,
 * and carry only the intent and the code to record. A RunledgerError thrown
 * inside a handler (say, an enqueue that conflicted) is "anything else".
 */
import type { JobOutcomeCode } from '../errors/codes.js';
import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_STACK_LENGTH } from './defaults.js';
import { MAX_TIMESTAMP, MIN_TIMESTAMP } from '../validation/primitives.js';
import { formatJsonPath, textProblem, toStorableText, type JsonProblem } from '../validation/storable.js';

export const JOB_HANDLER_ERROR = 'job.handler_error' satisfies JobOutcomeCode;
export const JOB_RETRY_REQUESTED = 'job.retry_requested' satisfies JobOutcomeCode;
export const JOB_TERMINAL_ERROR = 'job.terminal_error' satisfies JobOutcomeCode;
export const JOB_PAYLOAD_INVALID = 'job.payload_invalid' satisfies JobOutcomeCode;
export const JOB_OUTPUT_INVALID = 'job.output_invalid' satisfies JobOutcomeCode;
export const JOB_TIMEOUT = 'job.timeout' satisfies JobOutcomeCode;
export const JOB_WORKER_SHUTDOWN = 'job.worker_shutdown' satisfies JobOutcomeCode;
/** Release reason of a claimed job that waited in the worker's buffer too long to be started safely under its lease. */
export const JOB_BUFFER_EXPIRED = 'job.buffer_expired' satisfies JobOutcomeCode;

const MAX_CODE_LENGTH = 200;

export interface RetryableErrorOptions {
  /** Recorded as the job's `last_error_code`; default `job.retry_requested`. */
  code?: string;
  /** The retry is not claimable before this instant (the backoff still applies when it is later). */
  retryNotBefore?: Date;
  cause?: unknown;
}

/**
 * Thrown by a handler: this attempt failed, try again later.
 *
 * @example
 * if (response.status === 429) {
 *   throw new RetryableError('rate limited', { code: 'billing.rate_limited', retryNotBefore: new Date(Date.now() + 60_000) });
 * }
 */
export class RetryableError extends Error {
  readonly code: string;
  readonly retryNotBefore: Date | undefined;
  constructor(message: string, options: RetryableErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? JOB_RETRY_REQUESTED;
    this.retryNotBefore = options.retryNotBefore;
  }
}

export interface TerminalErrorOptions {
  /** Recorded as the job's `last_error_code`; default `job.terminal_error`. */
  code?: string;
  cause?: unknown;
}

/**
 * Thrown by a handler: retrying cannot help (the card was declined, the
 * record is gone). The job is dead-lettered now.
 *
 * @example
 * if (!customer) throw new TerminalError(`customer ${payload.customerId} does not exist`, { code: 'billing.customer_missing' });
 */
export class TerminalError extends Error {
  readonly code: string;
  constructor(message: string, options: TerminalErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? JOB_TERMINAL_ERROR;
  }
}

/** Why the worker aborted `ctx.signal`. */
export type JobAbortReason = 'timeout' | 'lease lost' | 'canceled' | 'shutdown';

/**
 * The `reason` of an aborted `ctx.signal` (so `signal.throwIfAborted()` throws
 * an Error, not a string). `reason` says which it was: `canceled` when the
 * lease was lost to a cancellation of the job, `lease lost` when to another attempt.
 */
export class JobAbortedError extends Error {
  readonly reason: JobAbortReason;
  constructor(reason: JobAbortReason, message: string = reason) {
    super(message);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/** The failJob options a throw turns into (before the lease is added). */
export interface FailureRecord {
  code: string;
  message: string;
  retryable: boolean;
  retryNotBefore?: Date;
  /** The thrown error's stack, cut to MAX_ERROR_STACK_LENGTH; absent when it had none. */
  stack?: string;
}

/**
 * Classifies what a handler threw. The record is always one `failJob`
 * accepts: a message PostgreSQL cannot store (NUL, lone surrogates) is
 * sanitised and cut to the column's limit rather than refused, since a
 * failure that cannot be recorded would re-run the job every attempt and
 * dead-letter it as `job.lease_expired`, its real cause lost.
 */
export function describeFailure(error: unknown): FailureRecord {
  const record = classifyFailure(error);
  const stack = stackOf(error);
  return stack === undefined ? record : { ...record, stack };
}

function classifyFailure(error: unknown): FailureRecord {
  if (error instanceof TerminalError) {
    return { code: safeCode(error.code, JOB_TERMINAL_ERROR), message: messageOf(error), retryable: false };
  }
  if (error instanceof RetryableError) {
    const notBefore = error.retryNotBefore;
    return {
      code: safeCode(error.code, JOB_RETRY_REQUESTED),
      message: messageOf(error),
      retryable: true,
      // Clamped into what the database stores (years 1 to 9999): the handler's intent survives, the failure is recorded.
      ...(notBefore instanceof Date && !Number.isNaN(notBefore.getTime())
        ? { retryNotBefore: new Date(Math.min(Math.max(notBefore.getTime(), MIN_TIMESTAMP.getTime()), MAX_TIMESTAMP.getTime())) }
        : {}),
    };
  }
  return { code: JOB_HANDLER_ERROR, message: messageOf(error), retryable: true };
}

/** The message of an output that cannot be stored, naming where in it (`Invalid output.items.3.name: contains NUL ...`). */
export function outputProblem(problem: JsonProblem): string {
  return `Invalid ${formatJsonPath(['output', ...problem.path])}: must be storable JSON: ${problem.reason}`;
}

/**
 * A failure must always be recordable: a code the queue would refuse (blank,
 * too long) falls back to the default; one PostgreSQL cannot store is
 * sanitised like a message, so the handler's code still shows.
 */
function safeCode(code: unknown, fallback: string): string {
  if (typeof code !== 'string') return fallback;
  const storable = textProblem(code) ? toStorableText(code) : code;
  return storable.trim().length > 0 && storable.length <= MAX_CODE_LENGTH ? storable : fallback;
}

/** A stack is diagnostics, never required: any trouble reading it (a throwing getter) means none. */
function stackOf(error: unknown): string | undefined {
  try {
    const stack = error instanceof Error ? error.stack : undefined;
    return typeof stack === 'string' && stack.trim() !== '' ? toStorableText(stack, MAX_ERROR_STACK_LENGTH) : undefined;
  } catch {
    return undefined;
  }
}

function messageOf(error: unknown): string {
  return toStorableText(rawMessageOf(error), MAX_ERROR_MESSAGE_LENGTH);
}

function rawMessageOf(error: unknown): string {
  if (error instanceof Error) return String(error.message) || error.name;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    // Cycles, BigInts, 10,000-deep objects, objects without a prototype (no toString).
    try {
      return String(error);
    } catch {
      return Object.prototype.toString.call(error);
    }
  }
}
