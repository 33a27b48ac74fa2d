/**
 * Concurrency keys' seats (runledger.concurrency_seats, migration 20270101000006_concurrency_seats), taken by
 * the claim and given back by the statements that end leases, as CTEs of those statements.
 *
 * At no instant do more live leases hold a key than its `max_leased`: a free seat is a row, a claim leases a
 * keyed job only with a free seat numbered at most the limit that it locked and deletes, the lease row names the
 * seat, and the statement that deletes the lease row inserts the seat back. Two claims of one key take different
 * seats (SKIP LOCKED), so claims never wait for each other, nor for a lease end.
 *
 * Lock order (src/coordination/locking.ts): seat rows after the statement's job rows and lease rows. A claim
 * locks free seats with SKIP LOCKED (never waits); a lease end inserts its own seat, which no other statement
 * can hold or insert (only the lease row naming it gives it back). No statement waits for a seat.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';

/** Seat row `seat` is one of key `key`'s free seats a claim may give out: numbered at most the key's limit. */
function givenOut(seat: string, key: string): Sql {
  const s = raw(seat);
  const k = raw(key);
  return sqltag`${s}.key = ${k} AND ${s}.seat <= (SELECT l.max_leased FROM runledger.concurrency_limits l WHERE l.key = ${k})`;
}

/**
 * A candidate's snapshot test (`jq` the job row): no key, or the job among its key's first due jobs that the
 * key's free seats can take. Keeps a full key's jobs, and a key's jobs beyond its free seats, out of the
 * claim's LIMIT; the admission below decides. When the claim could not fill the free seats, any of the key's
 * jobs may be a candidate (no probe). Subplans of the scan's filter rather than a function call: the test runs
 * for every keyed row the scan reads, those other claims hold included, and a PL/pgSQL call cost twice as much.
 * At most `countUpTo` entries of the free-seat index and `free` of the waiting index are read. `countUpTo` is the
 * claim's scan bucket, a literal at or above `claimLimit`: with the claim limit there, a claim of one costed its
 * seat count so much cheaper that PostgreSQL planned every such claim afresh instead of reusing the generic plan.
 */
export function concurrencyOpen(claimLimit: number, countUpTo: Sql): Sql {
  return sqltag`(jq.concurrency_key IS NULL OR (
          SELECT CASE WHEN f.free = 0 THEN false
                      WHEN f.free >= ${claimLimit}::int THEN true
                      ELSE jq.id IN (SELECT h.id FROM runledger.job_queue h
                                      WHERE h.concurrency_key = jq.concurrency_key AND h.claimable AND h.next_run_at <= now()
                                      ORDER BY h.priority DESC, h.next_run_at, h.id
                                      LIMIT f.free) END
            FROM (SELECT count(*)::int AS free FROM (
                    SELECT 1 FROM runledger.concurrency_seats s WHERE ${givenOut('s', 'jq.concurrency_key')}
                     LIMIT ${countUpTo}) x) f))`;
}

/**
 * CTEs `passed` (the `candidates` the concurrency keys let through: unkeyed ones, and each key's first ones in
 * claim order, each with a free seat of its key; every candidate column but the key, and `concurrency_seat`)
 * and what they need. A keyed candidate without a seat is not leased: it stays PENDING, and its row lock ends
 * with the statement, as do the locks of seats no claimed job takes.
 */
export function concurrencyAdmission(candidates: string, passed: string): Sql {
  const c = raw(candidates);
  const out = raw(passed);
  return sqltag`keyed AS (
        SELECT c.id, c.concurrency_key,
               row_number() OVER (PARTITION BY c.concurrency_key ORDER BY c.priority DESC, c.next_run_at, c.id) AS rn
          FROM ${c} c
         WHERE c.concurrency_key IS NOT NULL
      ),
      -- Each key's free seats at or below its limit, lowest first, as many as it has candidates: seats another
      -- claim holds are skipped, and a seat a claim took since this statement's snapshot is gone at the recheck.
      seats AS MATERIALIZED (
        SELECT w.concurrency_key, s.seat, row_number() OVER (PARTITION BY w.concurrency_key ORDER BY s.seat) AS rn
          FROM (SELECT concurrency_key, count(*)::int AS want FROM keyed GROUP BY concurrency_key ORDER BY concurrency_key) w
         CROSS JOIN LATERAL (
           SELECT cs.seat FROM runledger.concurrency_seats cs WHERE ${givenOut('cs', 'w.concurrency_key')}
            ORDER BY cs.seat
            LIMIT w.want
              FOR UPDATE SKIP LOCKED
         ) s
      ),
      ${out} AS (
        SELECT c.id, c.ctid, c.rate_key, c.priority, c.next_run_at, NULL::int AS concurrency_seat FROM ${c} c WHERE c.concurrency_key IS NULL
        UNION ALL
        SELECT c.id, c.ctid, c.rate_key, c.priority, c.next_run_at, st.seat
          FROM ${c} c
          JOIN keyed kd ON kd.id = c.id
          JOIN seats st ON st.concurrency_key = kd.concurrency_key AND st.rn = kd.rn
      )`;
}

/**
 * CTE `seats_taken`: the seats of the jobs the claim leased (`claimed`: with `concurrency_key`,
 * `concurrency_seat`), no longer free. From what it wrote, not what it admitted, so an admitted job left PENDING
 * takes no seat. The rows are the admission's, already locked.
 */
export function takeConcurrencySeats(claimed: string): Sql {
  const c = raw(claimed);
  return sqltag`seats_taken AS (
        DELETE FROM runledger.concurrency_seats s
         USING ${c} c
         WHERE c.concurrency_key IS NOT NULL AND s.key = c.concurrency_key AND s.seat = c.concurrency_seat
      )`;
}

/**
 * CTE `slots_freed`: the seats of the lease rows `gone` deleted (a relation with `concurrency_key`,
 * `concurrency_seat`), free again. A seat already free would mean a ledger fault verifyIntegrity reports; the
 * lease end does not fail on it.
 */
export function freeConcurrencySlots(gone: string): Sql {
  const g = raw(gone);
  return sqltag`slots_freed AS (
        INSERT INTO runledger.concurrency_seats (key, seat)
        SELECT g.concurrency_key, g.concurrency_seat FROM ${g} g
         WHERE g.concurrency_key IS NOT NULL AND g.concurrency_seat IS NOT NULL
        ON CONFLICT (key, seat) DO NOTHING
      )`;
}
