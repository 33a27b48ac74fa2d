/**
 * The one error family of runledger. Every failure a caller can see is a
 * RunledgerError with a stable dotted `code` and a `category`; `message` is
 * safe to show a client (never SQL, never internal identifiers beyond what the
 * caller passed in), `internalMessage` carries the context for logs.
 */
import type { ErrorCode } from './codes.js';

export type ErrorCategory = 'validation' | 'not_found' | 'conflict' | 'unavailable' | 'internal';

export interface RunledgerErrorOptions {
  /** Context for logs: SQL state, constraint, operation. Never shown to clients. */
  internalMessage?: string;
  /** Structured, client-safe facts about the failure (field path, step key, ...). */
  details?: Record<string, unknown>;
  /**
   * Facts the caller's code may need but no client or log line may see
   * (idempotency and replay keys: they can be bearer-like request
   * identifiers). Kept in `sensitiveDetails`, a non-enumerable property, so
   * `toJSON()`, `JSON.stringify` and `util.inspect` never show them.
   */
  sensitiveDetails?: Record<string, unknown>;
  cause?: unknown;
}

export class RunledgerError extends Error {
  readonly code: ErrorCode;
  readonly category: ErrorCategory;
  readonly internalMessage: string;
  readonly details: Readonly<Record<string, unknown>>;
  /** See `RunledgerErrorOptions.sensitiveDetails`: read it in code, it is never serialised. */
  declare readonly sensitiveDetails: Readonly<Record<string, unknown>>;

  constructor(category: ErrorCategory, code: ErrorCode, message: string, options: RunledgerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.category = category;
    this.code = code;
    this.internalMessage = options.internalMessage ?? message;
    this.details = Object.freeze({ ...(options.details ?? {}) });
    Object.defineProperty(this, 'sensitiveDetails', { value: Object.freeze({ ...(options.sensitiveDetails ?? {}) }), enumerable: false });
  }

  /** A log-friendly, client-safe shape (no internal message, no cause). */
  toJSON(): { name: string; code: ErrorCode; category: ErrorCategory; message: string; details: Record<string, unknown> } {
    return { name: this.name, code: this.code, category: this.category, message: this.message, details: { ...this.details } };
  }
}

export class ValidationError extends RunledgerError {
  /** Dotted path of the offending field, e.g. `payload` or `steps.2.key`. */
  readonly field: string;
  constructor(code: ErrorCode, field: string, message: string, options: RunledgerErrorOptions = {}) {
    super('validation', code, message, { ...options, details: { field, ...(options.details ?? {}) } });
    this.field = field;
  }
}

export class NotFoundError extends RunledgerError {
  constructor(code: ErrorCode, message: string, options: RunledgerErrorOptions = {}) {
    super('not_found', code, message, options);
  }
}

export class ConflictError extends RunledgerError {
  constructor(code: ErrorCode, message: string, options: RunledgerErrorOptions = {}) {
    super('conflict', code, message, options);
  }
}

export class UnavailableError extends RunledgerError {
  constructor(code: ErrorCode, message: string, options: RunledgerErrorOptions = {}) {
    super('unavailable', code, message, options);
  }
}

export class InternalError extends RunledgerError {
  constructor(code: ErrorCode, message: string, options: RunledgerErrorOptions = {}) {
    super('internal', code, message, options);
  }
}

/**
 * Whether `error` is a RunledgerError, optionally with one exact code.
 *
 * @example
 * catch (e) { if (isRunledgerError(e, 'job.lease_owner_mismatch')) return; throw e; }
 */
export function isRunledgerError(error: unknown, code?: ErrorCode): error is RunledgerError {
  return error instanceof RunledgerError && (code === undefined || error.code === code);
}
