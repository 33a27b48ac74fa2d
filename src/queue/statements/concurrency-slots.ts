/**
 * Concurrency keys' slots (runledger.concurrency_limits, migration 20270101000000_concurrency_keys), kept by
 * the statements that take and end leases, as CTEs of those statements.
 *
 * At no instant do more live leases hold a key than its `max_leased`. Live leases = `taken` (on the key's row in
 * concurrency_limits) - `released` (on its row in concurrency_releases), two counters that only grow
 * (migration 20270101000005). The claim admits a key's candidates only up to the free slots it reads under the
 * key row's lock, and adds the jobs it leased to `taken`; every statement that deletes a keyed lease row adds
 * it to `released` (a canceled lease keeps its slot until the reaper deletes it, as it keeps an execution
 * resource). `taken` is on the locked row because a claim that waited for another claim's lock reads the
 * other's leases only through that row; `released` is read from the claim's snapshot, which may miss an end
 * committed meanwhile: the claim then sees fewer free slots, never more.
 *
 * Lock order (src/coordination/locking.ts): key rows after the statement's job rows, in key order, with waits,
 * taken by claims only (claims of one key queue on its row for the length of a commit); release rows after a
 * statement's job and lease rows, in key order, taken by lease ends only. No statement takes both.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';

/**
 * A candidate's snapshot test (`jq` the job row): no key, or the job among its key's first due jobs that the
 * key's free slots can take (runledger.concurrency_open, migration 20270101000000). Keeps a full key's jobs,
 * and a key's jobs beyond its free slots, out of the claim's LIMIT; the admission below decides.
 */
export function concurrencyOpen(claimLimit: number): Sql {
  return sqltag`(jq.concurrency_key IS NULL OR runledger.concurrency_open(jq.concurrency_key, jq.id, ${claimLimit}::int))`;
}

/**
 * CTEs `passed` (the `candidates` the concurrency keys let through: unkeyed ones, and each key's first ones in
 * claim order up to its free slots; every candidate column but the key) and what they need. A keyed candidate
 * beyond its key's free slots is not leased: it stays PENDING, and its row lock ends with the statement.
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
      -- The keys' rows, locked in key order; a row a concurrent claim changed is read as committed, the released
      -- count as of this statement's snapshot (see the header). By primary key through an InitPlan array: a
      -- CTE's row estimate must not turn this into a scan of every key.
      gate AS (
        SELECT k.key, k.max_leased,
               k.taken - COALESCE((SELECT r.released FROM runledger.concurrency_releases r WHERE r.key = k.key), 0) AS leased
          FROM runledger.concurrency_limits k
         WHERE k.key = ANY (ARRAY(SELECT DISTINCT concurrency_key FROM keyed))
         ORDER BY k.key
           FOR UPDATE
      ),
      grants AS (
        SELECT g.key, LEAST(w.want, GREATEST(g.max_leased - g.leased, 0)) AS n
          FROM gate g
          JOIN (SELECT concurrency_key, count(*) AS want FROM keyed GROUP BY concurrency_key) w ON w.concurrency_key = g.key
      ),
      ${out} AS (
        SELECT c.id, c.ctid, c.rate_key, c.priority, c.next_run_at FROM ${c} c WHERE c.concurrency_key IS NULL
        UNION ALL
        SELECT c.id, c.ctid, c.rate_key, c.priority, c.next_run_at
          FROM ${c} c
          JOIN keyed kd ON kd.id = c.id
          JOIN grants gr ON gr.key = kd.concurrency_key AND kd.rn <= gr.n
      )`;
}

/**
 * The claim's count of the slots its leases took (`claimed`: the jobs it leased, with `concurrency_key`): from
 * what it wrote, not what it admitted, so an admitted job left PENDING takes no slot. The rows are the
 * admission's, already locked.
 */
export function countConcurrencySlots(claimed: string): Sql {
  const c = raw(claimed);
  return sqltag`slots_taken AS (
        UPDATE runledger.concurrency_limits k
           SET taken = k.taken + t.n
          FROM (SELECT concurrency_key, count(*)::int AS n FROM ${c} WHERE concurrency_key IS NOT NULL GROUP BY concurrency_key) t
         WHERE k.key = ANY (ARRAY(SELECT concurrency_key FROM ${c} WHERE concurrency_key IS NOT NULL)) AND k.key = t.concurrency_key
      )`;
}

/**
 * CTE `slots_freed`: the concurrency slots of the lease rows `gone` deleted (a relation with `concurrency_key`)
 * added to their keys' `released` counts, key rows taken in key order. The key's row in concurrency_limits is
 * not touched: a lease end never waits for a claim, nor a claim for it.
 */
export function freeConcurrencySlots(gone: string): Sql {
  const g = raw(gone);
  return sqltag`slots_freed AS (
        INSERT INTO runledger.concurrency_releases AS r (key, released)
        SELECT concurrency_key, count(*) FROM ${g} WHERE concurrency_key IS NOT NULL GROUP BY concurrency_key ORDER BY concurrency_key
        ON CONFLICT (key) DO UPDATE SET released = r.released + EXCLUDED.released
      )`;
}
