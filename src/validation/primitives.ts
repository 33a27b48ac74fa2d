/**
 * Shared zod building blocks for public inputs. Every string and JSON value
 * that runledger stores (or sends as a query parameter) is built from these,
 * so the storable check (storable.ts: no NUL, no lone surrogate, bounded
 * depth) is written once and no schema can forget it.
 */
import { z } from 'zod';
import type { JsonValue } from '../model/json.js';
import { findJsonProblem, textProblem } from './storable.js';

/**
 * Why `value` cannot be stored as jsonb, with the path inside it
 * (`a.0.b: contains NUL ...`), or undefined when it can.
 */
export function jsonProblem(value: unknown): string | undefined {
  const problem = findJsonProblem(value);
  if (!problem) return undefined;
  return problem.path.length > 0 ? `${problem.path.join('.')}: ${problem.reason}` : problem.reason;
}

/** Adds the issue at the offending member, so the field reads `payload.a.b`. */
function checkStorableJson(value: unknown, ctx: z.RefinementCtx): void {
  const problem = findJsonProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: `must be storable JSON: ${problem.reason}`, input: value });
}

/** Any JSON value PostgreSQL stores as jsonb exactly as given. */
export const jsonValue = z.custom<JsonValue>(() => true).superRefine(checkStorableJson);

/**
 * A JSON value typed `unknown` where the caller's type cannot be known (the
 * string job-type forms): a host's `interface`-typed value fits, which
 * `JsonValue` refuses (an interface has no index signature). Checked as
 * storable JSON at run time, like `jsonValue`.
 */
export const jsonInput = z
  .unknown()
  .superRefine(checkStorableJson)
  .transform((value) => value as JsonValue);

export const jsonObject = z
  .custom<{ [key: string]: JsonValue }>((value) => value !== null && typeof value === 'object' && !Array.isArray(value), { error: 'must be a JSON object' })
  .superRefine(checkStorableJson);

/** A string PostgreSQL stores exactly as given (see storable.ts). */
export const storableText = z.string().superRefine((text, ctx) => {
  const problem = textProblem(text);
  if (problem) ctx.addIssue({ code: 'custom', message: `must be storable text: ${problem}`, input: text });
});

/**
 * Instants runledger stores or compares in SQL. PostgreSQL's timestamptz
 * stops at 4714 BC and the driver writes BC years in a form it refuses, while
 * a JS Date reaches 271821 BC: so a stored instant is a valid Date in years
 * 1 to 9999 (UTC), checked here rather than failing as a database error.
 */
export const MIN_TIMESTAMP = new Date('0001-01-01T00:00:00.000Z');
export const MAX_TIMESTAMP = new Date('9999-12-31T23:59:59.999Z');
export const timestamp = z
  .date({ error: 'must be a Date' })
  .refine(
    (d) => !Number.isNaN(d.getTime()) && d.getTime() >= MIN_TIMESTAMP.getTime() && d.getTime() <= MAX_TIMESTAMP.getTime(),
    'must be a valid date in years 1 to 9999 (UTC)',
  );

/** A UUID in text, either case: the one pattern ids and the id parts of cursors are checked with. */
export const UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Exactly one UUID. */
export const UUID_REGEX = new RegExp(`^${UUID_PATTERN}$`, 'i');

export const uuid = z.string().regex(UUID_REGEX, 'must be a UUID');

/** The longest organization id runledger stores (characters); the column's CHECK says the same. */
export const MAX_ORGANIZATION_ID_LENGTH = 255;

/**
 * An organization id is the host's own id, whatever its shape (cuid, UUID,
 * an integer as text, a slug): any non-blank storable string of at most
 * MAX_ORGANIZATION_ID_LENGTH characters, stored and compared exactly as given.
 * Blank (empty or whitespace only) is refused on every surface, enqueue and
 * scope alike: it is what an unset variable in the host looks like, and as a
 * scope it must never read as "no organization given", i.e. everything.
 */
export const organizationId = storableText
  .refine((s) => s.length > 0, 'must not be empty')
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => s.length <= MAX_ORGANIZATION_ID_LENGTH, `must be at most ${MAX_ORGANIZATION_ID_LENGTH} characters`);

export const nonBlank = (max = 200) =>
  storableText.refine((s) => s.trim().length > 0, 'must not be blank').refine((s) => s.length <= max, `must be at most ${max} characters`);

/** Idempotency and replay keys: non-blank, at most 512 bytes of UTF-8. */
export const requestKey = storableText
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 512, 'must be at most 512 bytes (UTF-8)');

/** Most slots one concurrency key may have (the concurrency_limits check). */
export const MAX_CONCURRENCY_LIMIT = 100_000;
export const concurrencyLimit = z
  .number()
  .int('must be an integer')
  .min(1, 'must be at least 1')
  .max(MAX_CONCURRENCY_LIMIT, `must be at most ${MAX_CONCURRENCY_LIMIT}`);

/** Rate limits' bounds (the rate_limits checks): starts per period and burst, and the longest period (7 days). */
export const MAX_RATE_STARTS = 1_000_000;
export const MAX_RATE_PERIOD_MS = 7 * 24 * 60 * 60 * 1000;
export const rateStarts = z.number().int('must be an integer').min(1, 'must be at least 1').max(MAX_RATE_STARTS, `must be at most ${MAX_RATE_STARTS}`);
export const ratePeriodMs = z
  .number()
  .int('must be an integer')
  .min(1, 'must be at least 1')
  .max(MAX_RATE_PERIOD_MS, `must be at most ${MAX_RATE_PERIOD_MS} (7 days)`);

/** A fairness key's weight (the job_queue check): turns per round. */
export const MAX_FAIR_WEIGHT = 1000;
export const fairWeight = z.number().int('must be an integer').min(1, 'must be at least 1').max(MAX_FAIR_WEIGHT, `must be at most ${MAX_FAIR_WEIGHT}`);

export const int32 = z.number().int('must be an integer').min(-2147483648).max(2147483647);
export const positiveInt = z.number().int('must be an integer').min(1, 'must be at least 1').max(2147483647);

/** The largest delay a Node timer (setTimeout/setInterval) honours; longer ones fire at once, with a warning. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A duration in ms that feeds a Node timer: a finite integer in [0, 2^31-1]. */
export const timerMs = z
  .number()
  .int('must be an integer number of milliseconds')
  .min(0, 'must not be negative')
  .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (the longest a Node timer can wait)`);

/** A lease in seconds: short enough that its ms (timers, heartbeats) fit a Node timer. */
export const MAX_LEASE_SECONDS = Math.floor(MAX_TIMER_MS / 1000);
export const leaseSeconds = positiveInt.max(MAX_LEASE_SECONDS, `must be at most ${MAX_LEASE_SECONDS} seconds (its ms must fit a Node timer)`);
