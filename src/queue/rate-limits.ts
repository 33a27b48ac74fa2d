/**
 * Rate limits, read and set (issue 35). A job names a rate key at enqueue (`rateLimit`) or through its
 * definition; each start of one of the key's jobs takes a token of the key's bucket, which holds at most
 * `burst` and gains `limit` per `periodMs` (src/queue/statements/rate-slots.ts). The setting lives on the key's
 * row, so an operator can change it while jobs run: it applies from the next claim, with the tokens the bucket
 * had then (at most the new burst).
 */
import { z } from 'zod';
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { inScope } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { parseInput } from '../validation/parse.js';
import { ratePeriodMs, rateStarts, requestKey } from '../validation/primitives.js';
import { JOB_INVALID_INPUT, MAX_LIST_LIMIT } from './inputs.js';
import { RATE_ROW, setRateLimitStatement } from './statements/rate-limits.js';
import { rateWaitStatement } from './statements/rate-slots.js';
import { NotFoundError } from '../errors/runledger-error.js';
import { WAITING_COUNT_CAP } from './concurrency.js';

export interface RateLimit {
  key: string;
  /** Starts per period, on average. */
  limit: number;
  periodMs: number;
  /** Most starts at once: the bucket's size. */
  burst: number;
  /** Tokens in the bucket now (fractional: it refills continuously); a start takes a whole one. */
  tokens: number;
  /** PENDING jobs of the key that are due (waiting for a token, or for the next claim), at most WAITING_COUNT_CAP. */
  waiting: number;
  /** 'enqueue': the last enqueue naming the key set it; 'operator': setRateLimit pinned it. */
  setBy: 'enqueue' | 'operator';
  updatedAt: Date;
}

export const setRateLimitInputSchema = z.strictObject({
  key: requestKey,
  limit: z.union([z.strictObject({ limit: rateStarts, periodMs: ratePeriodMs, burst: rateStarts.optional() }), z.null()]),
});

/**
 * Pins `key`'s rate limit (enqueues stop changing it), or with `limit: null` gives it back to enqueues (the
 * current values stay until the next enqueue naming the key). `burst` defaults to `limit.limit`. Takes effect
 * at the next claim. An operator's action: every organization's jobs of the key share the bucket.
 *
 * @example
 * await setRateLimit(prisma, { key: 'stripe', limit: { limit: 100, periodMs: 60_000, burst: 10 } });
 */
export async function setRateLimit(db: Db, input: { key: string; limit: { limit: number; periodMs: number; burst?: number } | null }): Promise<RateLimit> {
  const { key, limit } = parseInput(setRateLimitInputSchema, input, JOB_INVALID_INPUT);
  const setting = limit === null ? null : { limit: limit.limit, periodMs: limit.periodMs, burst: limit.burst ?? limit.limit };
  const [row] = await withStatement(db, 'set rate limit', async (tx) =>
    tx.$queryRaw<RateRow[]>(...asTemplate(setRateLimitStatement(key, setting, WAITING_COUNT_CAP))),
  );
  if (row === undefined) throw new NotFoundError('job.rate_key_not_found', 'No job has named this rate key.');
  return toRateLimit(row);
}

export const listRateLimitsInputSchema = z.strictObject({
  scope: scopeSchema,
  /** Keys after this one (the last key of the previous page). */
  after: requestKey.optional(),
  limit: z.number().int('must be an integer').min(1, 'must be at least 1').max(MAX_LIST_LIMIT).optional(),
});

/**
 * Rate keys in key order, with their settings, tokens now and waiting jobs. In an organization's scope: only
 * keys its jobs wait for, counting only its jobs (the bucket itself is shared by every job of the key); in the
 * admin scope every key.
 *
 * @example
 * const { items, nextAfter } = await listRateLimits(prisma, { scope: adminScope() });
 */
export async function listRateLimits(
  db: Db,
  input: { scope: Scope; after?: string; limit?: number },
): Promise<{ items: RateLimit[]; nextAfter: string | null }> {
  const { scope, after, limit = 100 } = parseInput(listRateLimitsInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(scope);
  return withStatement(
    db,
    'list rate limits',
    async (tx) => {
      const rows = await tx.$queryRaw<RateRow[]>`
        SELECT ${RATE_ROW},
               (SELECT count(*)::int FROM (
                  SELECT 1 FROM runledger.job_queue jq
                   WHERE jq.claimable AND jq.rate_key = r.key AND jq.next_run_at <= now()
                     AND ${inScope(s, 'jq.organization_id')}
                   LIMIT ${WAITING_COUNT_CAP}::int) w) AS waiting
          FROM runledger.rate_limits r
         WHERE (${after ?? null}::text IS NULL OR r.key > ${after ?? null}::text)
           AND (${s.all}::boolean
                OR EXISTS (SELECT 1 FROM runledger.job_queue jq
                            WHERE jq.claimable AND jq.rate_key = r.key AND ${inScope(s, 'jq.organization_id')}))
         ORDER BY r.key
         LIMIT ${limit + 1}::int`;
      const items = rows.slice(0, limit).map(toRateLimit);
      return { items, nextAfter: rows.length > limit ? (items.at(-1)?.key ?? null) : null };
    },
    { readCommitted: false },
  );
}

interface RateRow {
  key: string;
  max_starts: number;
  period_ms: number;
  burst: number;
  tokens: number;
  set_by: 'enqueue' | 'operator';
  updated_at: Date;
  waiting: number;
}

function toRateLimit(row: RateRow): RateLimit {
  return {
    key: row.key,
    limit: row.max_starts,
    periodMs: row.period_ms,
    burst: row.burst,
    tokens: row.tokens,
    waiting: row.waiting,
    setBy: row.set_by,
    updatedAt: row.updated_at,
  };
}

/**
 * Milliseconds until one of `keys` has `want` tokens (at most its burst) while due jobs of `jobTypes` wait for
 * it; undefined when none does. The worker's wake-up for rate-limited work (src/worker/rate-wakes.ts).
 */
export async function rateWaitMs(db: Db, keys: readonly string[], jobTypes: readonly string[], want: number): Promise<number | undefined> {
  const [row] = await withStatement(
    db,
    'rate wait',
    async (tx) => tx.$queryRaw<{ wait_ms: number | null }[]>(...asTemplate(rateWaitStatement(keys, jobTypes, want))),
    {
      readCommitted: false,
    },
  );
  return row?.wait_ms ?? undefined;
}
