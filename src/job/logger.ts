/**
 * The worker logs through this four-method interface, so any logger (pino,
 * winston, console) fits with a one-line adapter. Fields are structured
 * context (`jobId`, `workerId`, counts); messages are fixed strings, so they
 * group well in a log index.
 *
 * Default: `createConsoleLogger({ level: 'info' })`. A worker is a
 * long-running process whose start, stop, reaped leases and errors an
 * operator needs to see; a library default that swallows them is the worse
 * surprise. Pass `silentLogger` to mute it.
 */

import { ValidationError } from '../errors/runledger-error.js';

export type LogFields = Record<string, unknown>;

export interface WorkerLogger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const LEVEL_RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const noop = (): void => {};

/** Discards everything. */
export const silentLogger: WorkerLogger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/**
 * Writes `[runledger] message {fields}` lines through `console`, dropping
 * levels below `level` (default `info`).
 */
export function createConsoleLogger(options: { level?: LogLevel } = {}): WorkerLogger {
  const level = (options as { level?: unknown } | null)?.level ?? 'info';
  if (options === null || typeof options !== 'object' || typeof level !== 'string' || !Object.hasOwn(LEVEL_RANK, level)) {
    throw new ValidationError('worker.invalid_options', 'level', `Expected level to be one of ${Object.keys(LEVEL_RANK).join(', ')}.`);
  }
  const threshold = LEVEL_RANK[level as LogLevel];
  const write = (level: LogLevel, sink: (...args: unknown[]) => void) =>
    LEVEL_RANK[level] < threshold
      ? noop
      : (message: string, fields?: LogFields) => (fields ? sink(`[runledger] ${message}`, fields) : sink(`[runledger] ${message}`));
  return {
    debug: write('debug', console.debug),
    info: write('info', console.info),
    warn: write('warn', console.warn),
    error: write('error', console.error),
  };
}

/** A logger that adds `bound` to every call's fields (a call's own fields win). */
export function withLogFields(logger: WorkerLogger, bound: LogFields): WorkerLogger {
  const merge = (fields?: LogFields): LogFields => (fields ? { ...bound, ...fields } : bound);
  return {
    debug: (message, fields) => logger.debug(message, merge(fields)),
    info: (message, fields) => logger.info(message, merge(fields)),
    warn: (message, fields) => logger.warn(message, merge(fields)),
    error: (message, fields) => logger.error(message, merge(fields)),
  };
}

/**
 * `withLogFields` as one object with its methods on the prototype, for the worker's own per-job logging (one
 * per job run, against seven allocations of the closures). Its methods need their `this`: never hand it to
 * code that may call them detached (a handler's `ctx.logger` is `withLogFields`, see context.ts).
 */
export class BoundLogger implements WorkerLogger {
  constructor(
    readonly logger: WorkerLogger,
    readonly bound: LogFields,
  ) {}

  debug(message: string, fields?: LogFields): void {
    this.logger.debug(message, this.merge(fields));
  }

  info(message: string, fields?: LogFields): void {
    this.logger.info(message, this.merge(fields));
  }

  warn(message: string, fields?: LogFields): void {
    this.logger.warn(message, this.merge(fields));
  }

  error(message: string, fields?: LogFields): void {
    this.logger.error(message, this.merge(fields));
  }

  private merge(fields: LogFields | undefined): LogFields {
    return fields ? { ...this.bound, ...fields } : this.bound;
  }
}

/** A logger call must never break the worker: a throwing logger is ignored. */
export function guardLogger(logger: WorkerLogger): WorkerLogger {
  const guard =
    (method: (message: string, fields?: LogFields) => void) =>
    (message: string, fields?: LogFields): void => {
      try {
        method.call(logger, message, fields);
      } catch {
        // Nothing sensible to do: logging the logger's failure would go through the same logger.
      }
    };
  return { debug: guard(logger.debug), info: guard(logger.info), warn: guard(logger.warn), error: guard(logger.error) };
}

export function isWorkerLogger(value: unknown): value is WorkerLogger {
  const v = value as Partial<Record<keyof WorkerLogger, unknown>> | null;
  return (
    v !== null &&
    typeof v === 'object' &&
    typeof v.debug === 'function' &&
    typeof v.info === 'function' &&
    typeof v.warn === 'function' &&
    typeof v.error === 'function'
  );
}
