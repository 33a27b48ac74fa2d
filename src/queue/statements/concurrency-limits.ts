/**
 * Writes of concurrency keys' limits (runledger.concurrency_limits, migration 20270101000000_concurrency_keys).
 * An enqueue creates a key's row and sets its limit; an operator's setConcurrencyLimit pins it (set_by
 * 'operator') so enqueues stop changing it, until it gives it back. A write that raises the limit above the
 * key's `seats` creates the seats above it, free (runledger.concurrency_seats, migration 20270101000006); which
 * seats are held is the claim's and the lease ends' (concurrency-slots.ts), never written here. A lowered limit
 * leaves the seats above it: claims never give them out.
 *
 * Claims and lease ends never lock a key's row, so a limit write never waits behind a worker, nor a worker
 * behind a limit change in a long host transaction.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';

/**
 * CTEs of an enqueue statement: each key of `input` (a relation with `concurrency_key`, `concurrency_limit`;
 * one limit per key, inputs.ts refuses two) gets its row, and its limit when an enqueue set the row's and it
 * differs. A change skips a row another statement holds (another enqueue or setConcurrencyLimit changing it):
 * the next enqueue applies it.
 */
export function concurrencyLimitWrites(input: string, when: Sql): Sql {
  const i = raw(input);
  return sqltag`concurrency_wanted AS (
      SELECT DISTINCT i.concurrency_key AS key, i.concurrency_limit AS max_leased
        FROM ${i} i
       WHERE i.concurrency_key IS NOT NULL AND ${when}
    ),
    concurrency_created AS (
      INSERT INTO runledger.concurrency_limits (key, max_leased, seats)
      SELECT w.key, w.max_leased, w.max_leased FROM concurrency_wanted w ORDER BY w.key
      ON CONFLICT (key) DO NOTHING
      RETURNING key, 0 AS old_seats, seats
    ),
    concurrency_changed AS (
      UPDATE runledger.concurrency_limits k
         SET max_leased = x.max_leased, seats = GREATEST(x.old_seats, x.max_leased), updated_at = now()
        FROM (SELECT c.key, v.max_leased, c.seats AS old_seats FROM runledger.concurrency_limits c
                JOIN concurrency_wanted v ON v.key = c.key
               WHERE c.set_by = 'enqueue' AND c.max_leased <> v.max_leased
               ORDER BY c.key
                 FOR UPDATE OF c SKIP LOCKED) x
       WHERE k.key = x.key
      RETURNING k.key, x.old_seats, k.seats
    ),
    ${addSeats(sqltag`SELECT key, old_seats, seats FROM concurrency_created UNION ALL SELECT key, old_seats, seats FROM concurrency_changed`)}`;
}

/**
 * CTE `concurrency_seated`: the seats a limit write created, free. `written` (a query of key, old_seats, seats)
 * comes from the statement that raised the key row's `seats` while holding the row (its insert, or its lock),
 * so each seat number is created once: a seat a lease holds is never made again.
 */
function addSeats(written: Sql): Sql {
  return sqltag`concurrency_seated AS (
      INSERT INTO runledger.concurrency_seats (key, seat)
      SELECT w.key, n.seat FROM (${written}) w CROSS JOIN LATERAL generate_series(w.old_seats + 1, w.seats) AS n(seat)
       ORDER BY w.key, n.seat
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
 * live leases and waiting count (at most `waitingCap`); nothing when `limit` is null and the key has no row, or
 * when an enqueue created the row after this statement's snapshot (the caller runs it again).
 */
export function setConcurrencyLimitStatement(key: string, limit: number | null, waitingCap: number): Sql {
  const write =
    limit === null
      ? sqltag`written AS (
        UPDATE runledger.concurrency_limits k SET set_by = 'enqueue', updated_at = now()
         WHERE k.key = ${key}
        RETURNING k.key, k.max_leased, k.set_by, k.updated_at
      )`
      : sqltag`created AS (
        INSERT INTO runledger.concurrency_limits AS k (key, max_leased, set_by, seats) VALUES (${key}, ${limit}::int, 'operator', ${limit}::int)
        ON CONFLICT (key) DO NOTHING
        RETURNING k.key, k.max_leased, k.set_by, k.updated_at, 0 AS old_seats, k.seats
      ),
      changed AS (
        UPDATE runledger.concurrency_limits k
           SET max_leased = ${limit}::int, set_by = 'operator', seats = GREATEST(x.old_seats, ${limit}::int), updated_at = now()
          FROM (SELECT c.key, c.seats AS old_seats FROM runledger.concurrency_limits c WHERE c.key = ${key} FOR UPDATE) x
         WHERE k.key = x.key
        RETURNING k.key, k.max_leased, k.set_by, k.updated_at, x.old_seats, k.seats
      ),
      ${addSeats(sqltag`SELECT key, old_seats, seats FROM created UNION ALL SELECT key, old_seats, seats FROM changed`)},
      written AS (
        SELECT key, max_leased, set_by, updated_at FROM created UNION ALL SELECT key, max_leased, set_by, updated_at FROM changed
      )`;
  return sqltag`
    WITH ${write}
    SELECT w.*,
           (SELECT count(*)::int FROM runledger.job_leases l WHERE l.concurrency_key = w.key) AS leased,
           (SELECT count(*)::int FROM (
              SELECT 1 FROM runledger.job_queue jq
               WHERE jq.claimable AND jq.concurrency_key = w.key AND jq.next_run_at <= now()
               LIMIT ${waitingCap}::int) x) AS waiting
      FROM written w`;
}
