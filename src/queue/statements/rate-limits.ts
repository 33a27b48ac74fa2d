/**
 * Writes of rate keys' limits (runledger.rate_limits, migration 20270101000002_rate_limits). An enqueue creates
 * a key's bucket, full, and sets its limit; an operator's setRateLimit pins it (set_by 'operator') so enqueues
 * stop changing it, until it gives it back. The tokens are the claim's (rate-slots.ts): a change of limit here
 * first refills the bucket to now at the old rate, then caps it at the new burst.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';

/** The bucket of row `r` refilled to now() at its current rate, capped at `burst` (a new burst, when changing). */
export function refilledTokens(r: string, burst: string): Sql {
  return raw(`LEAST(${burst}, runledger.rate_tokens(${r}.tokens, ${r}.refilled_at, now(), ${r}.max_starts, ${r}.period_ms, ${r}.burst))`);
}

/**
 * CTEs of an enqueue statement: each rate key of `input` (a relation with `rate_key`, `rate_limit`,
 * `rate_period_ms`, `rate_burst`; one setting per key, inputs.ts refuses two) gets its row, and its setting when
 * an enqueue set the row's and it differs. A change skips a row a claim holds: the next enqueue applies it, and
 * the enqueue never waits behind a worker.
 */
export function rateLimitWrites(input: string): Sql {
  const i = raw(input);
  return sqltag`rate_wanted AS (
      SELECT DISTINCT i.rate_key AS key, i.rate_limit AS max_starts, i.rate_period_ms AS period_ms, i.rate_burst AS burst
        FROM ${i} i
       WHERE i.rate_key IS NOT NULL
    ),
    rate_created AS (
      INSERT INTO runledger.rate_limits (key, max_starts, period_ms, burst, tokens)
      SELECT w.key, w.max_starts, w.period_ms, w.burst, w.burst FROM rate_wanted w ORDER BY w.key
      ON CONFLICT (key) DO NOTHING
    ),
    rate_changed AS (
      UPDATE runledger.rate_limits r
         SET tokens = ${refilledTokens('r', 'w.burst')}, refilled_at = GREATEST(r.refilled_at, now()),
             max_starts = w.max_starts, period_ms = w.period_ms, burst = w.burst, updated_at = now()
        FROM rate_wanted w
       WHERE r.key = w.key
         AND r.key IN (SELECT x.key FROM runledger.rate_limits x
                         JOIN rate_wanted v ON v.key = x.key
                        WHERE x.set_by = 'enqueue' AND (x.max_starts, x.period_ms, x.burst) <> (v.max_starts, v.period_ms, v.burst)
                        ORDER BY x.key
                          FOR UPDATE OF x SKIP LOCKED)
    )`;
}

export interface RateSetting {
  key: string;
  limit: number;
  periodMs: number;
  burst: number;
}

/** The rows of `settings` (one per key) for writers without a batch statement of their own. */
export function writeRateLimitsStatement(settings: readonly RateSetting[]): Sql {
  return sqltag`
    WITH input AS (
      SELECT * FROM unnest(${settings.map((s) => s.key)}::text[], ${settings.map((s) => s.limit)}::int[],
                           ${settings.map((s) => s.periodMs)}::int[], ${settings.map((s) => s.burst)}::int[])
               AS i(rate_key, rate_limit, rate_period_ms, rate_burst)
    ),
    ${rateLimitWrites('input')}
    SELECT count(*)::int AS n FROM rate_wanted`;
}

export const RATE_ROW = sqltag`r.key, r.max_starts, r.period_ms, r.burst, r.set_by, r.updated_at,
       runledger.rate_tokens(r.tokens, r.refilled_at, now(), r.max_starts, r.period_ms, r.burst) AS tokens`;

/**
 * An operator's setting for `key`, pinned (`setting` given: the row is created, full, if no job named the key
 * yet), or given back to enqueues (null: the values stay until an enqueue sets some). Returns the row with its
 * waiting count (at most `waitingCap`), or nothing when `setting` is null and the key has no row.
 */
export function setRateLimitStatement(key: string, setting: Omit<RateSetting, 'key'> | null, waitingCap: number): Sql {
  const write =
    setting === null
      ? sqltag`UPDATE runledger.rate_limits r SET set_by = 'enqueue', updated_at = now()
                WHERE r.key = ${key}
               RETURNING ${RATE_ROW}`
      : sqltag`INSERT INTO runledger.rate_limits AS r (key, max_starts, period_ms, burst, tokens, set_by)
               VALUES (${key}, ${setting.limit}::int, ${setting.periodMs}::int, ${setting.burst}::int, ${setting.burst}::int, 'operator')
               ON CONFLICT (key) DO UPDATE
                 SET tokens = ${refilledTokens('r', 'EXCLUDED.burst')}, refilled_at = GREATEST(r.refilled_at, now()),
                     max_starts = EXCLUDED.max_starts, period_ms = EXCLUDED.period_ms, burst = EXCLUDED.burst,
                     set_by = 'operator', updated_at = now()
               RETURNING ${RATE_ROW}`;
  return sqltag`
    WITH written AS (${write})
    SELECT w.*, (SELECT count(*)::int FROM (
                   SELECT 1 FROM runledger.job_queue jq
                    WHERE jq.claimable AND jq.rate_key = w.key AND jq.next_run_at <= now()
                    LIMIT ${waitingCap}::int) x) AS waiting
      FROM written w`;
}
