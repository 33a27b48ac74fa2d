/**
 * Concurrency keys' slots (runledger.concurrency_limits, migration 20270101000000_concurrency_keys), kept by
 * the statements that take and end leases, as CTEs of those statements.
 *
 * At no instant do more live leases hold a key than its `max_leased`: the claim admits a key's candidates only
 * up to the free slots it reads on the key's row under that row's lock, and adds the jobs it leased; every
 * statement that deletes a keyed lease row subtracts it (a canceled lease keeps its slot until the reaper
 * deletes it, as it keeps an execution resource). A counter on the locked row, not a count of lease rows: a
 * claim that waited for another claim's row lock reads the other's new leases only through that row.
 *
 * Lock order (src/coordination/locking.ts): key rows after the statement's job rows (and, when ending leases,
 * its lease rows), in key order, with waits: claims of one key queue on its row for the length of a commit.
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
      -- The keys' rows, locked in key order; a row a concurrent claim or completion changed is read as committed.
      -- By primary key through an InitPlan array: a CTE's row estimate must not turn this into a scan of every key.
      gate AS (
        SELECT k.key, k.max_leased, k.leased FROM runledger.concurrency_limits k
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
           SET leased = k.leased + t.n
          FROM (SELECT concurrency_key, count(*)::int AS n FROM ${c} WHERE concurrency_key IS NOT NULL GROUP BY concurrency_key) t
         WHERE k.key = ANY (ARRAY(SELECT concurrency_key FROM ${c} WHERE concurrency_key IS NOT NULL)) AND k.key = t.concurrency_key
      )`;
}

/**
 * CTEs counting back the concurrency slots of the lease rows `gone` deleted (a relation with
 * `concurrency_key`): each key's row locked in key order, then lowered by its rows. Never below 0: a count
 * verifyIntegrity finds wrong must not stop completions.
 */
export function freeConcurrencySlots(gone: string): Sql {
  const g = raw(gone);
  return sqltag`slot_keys AS (
        SELECT k.key FROM runledger.concurrency_limits k
         WHERE k.key = ANY (ARRAY(SELECT DISTINCT concurrency_key FROM ${g} WHERE concurrency_key IS NOT NULL))
         ORDER BY k.key
           FOR UPDATE
      ),
      slots_freed AS (
        UPDATE runledger.concurrency_limits k
           SET leased = GREATEST(k.leased - e.n, 0)
          FROM (SELECT concurrency_key, count(*)::int AS n FROM ${g} WHERE concurrency_key IS NOT NULL GROUP BY concurrency_key) e
         WHERE k.key = ANY (ARRAY(SELECT key FROM slot_keys)) AND k.key = e.concurrency_key
      )`;
}
