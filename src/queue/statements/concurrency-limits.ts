/**
 * Writes of concurrency keys' limits (runledger.concurrency_limits, migration 20270101000000_concurrency_keys).
 * An enqueue creates a key's row and sets its limit; an operator's setConcurrencyLimit pins it (set_by
 * 'operator') so enqueues stop changing it, until it gives it back. The slot count (`leased`) is the claim's
 * and the lease ends' (concurrency-slots.ts), never written here.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';

/**
 * CTEs of an enqueue statement: each key of `input` (a relation with `concurrency_key`, `concurrency_limit`;
 * one limit per key, inputs.ts refuses two) gets its row, and its limit when an enqueue set the row's and it
 * differs. A change skips a row another statement holds (a claim counting a slot, a completion freeing one):
 * the next enqueue applies it, and the enqueue never waits behind a worker. Once changed, the row stays locked
 * until the enqueue's transaction ends, so a limit change inside a long host transaction holds that key's
 * claims and lease ends until it commits (docs/guide/flow-control.md).
 */
export function concurrencyLimitWrites(input: string, when: Sql): Sql {
  const i = raw(input);
  return sqltag`concurrency_wanted AS (
      SELECT DISTINCT i.concurrency_key AS key, i.concurrency_limit AS max_leased
        FROM ${i} i
       WHERE i.concurrency_key IS NOT NULL AND ${when}
    ),
    concurrency_created AS (
      INSERT INTO runledger.concurrency_limits (key, max_leased)
      SELECT w.key, w.max_leased FROM concurrency_wanted w ORDER BY w.key
      ON CONFLICT (key) DO NOTHING
    ),
    concurrency_changed AS (
      UPDATE runledger.concurrency_limits k
         SET max_leased = w.max_leased, updated_at = now()
        FROM concurrency_wanted w
       WHERE k.key = w.key
         AND k.key IN (SELECT x.key FROM runledger.concurrency_limits x
                         JOIN concurrency_wanted v ON v.key = x.key
                        WHERE x.set_by = 'enqueue' AND x.max_leased <> v.max_leased
                        ORDER BY x.key
                          FOR UPDATE OF x SKIP LOCKED)
    )`;
}

/** The limit rows of `settings` (key, limit pairs, one limit per key) for writers without a batch of their own. */
export function writeConcurrencyLimitsStatement(settings: readonly { key: string; limit: number }[]): Sql {
  return sqltag`
    WITH input AS (
      SELECT * FROM unnest(${settings.map((s) => s.key)}::text[], ${settings.map((s) => s.limit)}::int[]) AS i(concurrency_key, concurrency_limit)
    ),
    ${concurrencyLimitWrites('input', sqltag`true`)}
    SELECT count(*)::int AS n FROM concurrency_wanted`;
}

/**
 * An operator's limit for `key`, pinned (`limit` a number: the row is created if no job named the key yet), or
 * given back to enqueues (`limit` null: the value stays until an enqueue sets one). Returns the row with its
 * waiting count (at most `waitingCap`), or nothing when `limit` is null and the key has no row.
 */
export function setConcurrencyLimitStatement(key: string, limit: number | null, waitingCap: number): Sql {
  const write =
    limit === null
      ? sqltag`UPDATE runledger.concurrency_limits k SET set_by = 'enqueue', updated_at = now()
                WHERE k.key = ${key}
               RETURNING k.key, k.max_leased, (k.taken - COALESCE((SELECT r.released FROM runledger.concurrency_releases r WHERE r.key = k.key), 0))::int AS leased, k.set_by, k.updated_at`
      : sqltag`INSERT INTO runledger.concurrency_limits AS k (key, max_leased, set_by) VALUES (${key}, ${limit}::int, 'operator')
               ON CONFLICT (key) DO UPDATE SET max_leased = EXCLUDED.max_leased, set_by = 'operator', updated_at = now()
               RETURNING k.key, k.max_leased, (k.taken - COALESCE((SELECT r.released FROM runledger.concurrency_releases r WHERE r.key = k.key), 0))::int AS leased, k.set_by, k.updated_at`;
  return sqltag`
    WITH written AS (${write})
    SELECT w.*, (SELECT count(*)::int FROM (
                   SELECT 1 FROM runledger.job_queue jq
                    WHERE jq.claimable AND jq.concurrency_key = w.key AND jq.next_run_at <= now()
                    LIMIT ${waitingCap}::int) x) AS waiting
      FROM written w`;
}
