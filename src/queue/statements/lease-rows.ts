/**
 * The lease rows (runledger.job_leases, migration 20261229000000_job_leases): one per live lease, kept in step
 * by the statement that writes its job row, as CTEs of that statement (no extra round trip, set-based). The
 * job row keeps `lease_owner` and `lease_expires_at` (the fence reads them); a lease row is keyed by that
 * expiry and the job id, so each write below finds its row by primary key from the job row it locked.
 *
 * Lock order (src/coordination/locking.ts): a lease row after its job row (rung 1), never before. Every CTE
 * here reads the job rows from the statement's lock CTE, so it writes a lease row only once the statement
 * holds that job's row lock; only the reaper's sweep of run-out canceled leases locks lease rows alone, with
 * SKIP LOCKED (never waits).
 *
 * A statement's lock CTE carries `LEASE_ROW_KEY` (the expiry as locked); the writes below take the job rows
 * the statement actually wrote (the fence held) with `id` and that key: its write returns it, or
 * withLeaseRowKey() joins it from the lock CTE.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';
import { freeConcurrencySlots } from './concurrency-slots.js';

/** The select item a lock CTE adds (`jq` the locked job row): the key of its lease row. */
export const LEASE_ROW_KEY = sqltag`jq.lease_expires_at AS lease_row_expires_at`;

/**
 * The lease row `l` of the job `w` (a row of a relation carrying `id` and `lease_row_expires_at`, the expiry
 * its lock read), by primary key. A heartbeat that committed while this statement waited for the job row moved
 * both rows: the lock reads the job row as it is now (the new expiry), but the scan of job_leases finds only
 * the version its snapshot sees (the old one), and then follows it to the new version, which must match too.
 * So the row is matched at either expiry: the statement snapshot's (a primary key read of the job row) and
 * the lock's. Written as `expires_at = ANY (ARRAY[...]) AND job_id = ...`, one probe of the primary key per
 * expiry: an `IN` of two expressions was planned as a bitmap AND with a scan of the key's second column over
 * the whole index, per job (1.5 s for a completion of 250 on a churned table).
 */
function leaseRowOf(w: string): Sql {
  const j = raw(w);
  return sqltag`l.expires_at = ANY (ARRAY[${j}.lease_row_expires_at, (SELECT s.lease_expires_at FROM runledger.job_queue s WHERE s.id = ${j}.id)])
           AND l.job_id = ${j}.id`;
}

/**
 * The rows `written` (a CTE with `id`), each with the lease row key its lock CTE `locked` read, for a statement
 * that writes one job: a join of two one-row CTEs. A batch statement returns `lease_row_expires_at` from its
 * write instead (a join of two CTEs of n rows is planned as a nested loop of n x n: their estimates are 1).
 */
export function withLeaseRowKey(written: string, locked: string): Sql {
  return sqltag`(SELECT w.id, k.lease_row_expires_at FROM ${raw(written)} w JOIN ${raw(locked)} k ON k.id = w.id)`;
}

/**
 * The claim: one lease row per claimed job (`claimed` has `id`, `lease_expires_at`, `resource_key`,
 * `concurrency_key`, `concurrency_seat`).
 */
export function insertLeaseRows(claimed: string): Sql {
  const c = raw(claimed);
  // A second live lease of a resource key is refused here (job_leases_resource_uidx, retried by claimJobs).
  return sqltag`INSERT INTO runledger.job_leases (expires_at, job_id, resource_key, concurrency_key, concurrency_seat)
        SELECT c.lease_expires_at, c.id, c.resource_key, c.concurrency_key, c.concurrency_seat FROM ${c} c`;
}

/**
 * Completion, failure, continuation, release, reaper: the lease rows of the jobs `written` out of LEASED
 * (`written`: a relation with `id` and `lease_row_expires_at`: a CTE name or withLeaseRowKey()), and their
 * concurrency seats freed. Two CTEs of the caller's WITH list: `unleased` and freeConcurrencySlots'.
 */
export function endLeaseRows(written: Sql): Sql {
  return sqltag`unleased AS (${deleteLeaseRows(written)}),
      ${freeConcurrencySlots('unleased')}`;
}

/** The DELETE of endLeaseRows, returning each row's key and seat (the reaper frees them with its sweep's). */
export function deleteLeaseRows(written: Sql): Sql {
  return sqltag`DELETE FROM runledger.job_leases l
         USING ${written} w
         WHERE ${leaseRowOf('w')}
        RETURNING l.concurrency_key, l.concurrency_seat`;
}

/** The heartbeat: the lease rows of the jobs `written` (with `lease_row_expires_at` and the new `lease_expires_at`) move to it. */
export function moveLeaseRows(written: Sql): Sql {
  return sqltag`UPDATE runledger.job_leases l
           SET expires_at = w.lease_expires_at
          FROM ${written} w
         WHERE ${leaseRowOf('w')}`;
}

/**
 * A cancellation: the lease rows of the jobs `written` to CANCELED are marked canceled and kept until they run
 * out (the handler may still run: resource_claimable() holds the key until then). A PENDING job has none.
 */
export function cancelLeaseRows(written: Sql): Sql {
  return sqltag`UPDATE runledger.job_leases l
           SET canceled = true
          FROM ${written} w
         WHERE ${leaseRowOf('w')} AND NOT l.canceled`;
}

/** The reaper's pick: live leases run out by now, oldest first (the primary key's order); `l` the lease row. */
export const EXPIRED_LEASE_ROWS = sqltag`runledger.job_leases l
          JOIN runledger.job_queue jq ON jq.id = l.job_id
         WHERE l.expires_at <= now() AND NOT l.canceled
           AND jq.status = 'LEASED' AND jq.lease_expires_at = l.expires_at
         ORDER BY l.expires_at, l.job_id`;

/**
 * The reaper: up to `limit` canceled lease rows that ran out (their quiescence is over), oldest first. Their
 * jobs are finished, and nothing but this sweep writes a canceled row, so SKIP LOCKED (never waits) is all
 * the order needs.
 */
export function deleteRunOutCanceledLeases(limit: number): Sql {
  // The caller frees the keyed rows' seats from RETURNING (freeConcurrencySlots).
  return sqltag`DELETE FROM runledger.job_leases l
        WHERE (l.expires_at, l.job_id) IN (
          SELECT c.expires_at, c.job_id FROM runledger.job_leases c
           WHERE c.canceled AND c.expires_at <= now()
           ORDER BY c.expires_at, c.job_id
           LIMIT ${limit}::int
             FOR UPDATE SKIP LOCKED)
        RETURNING l.concurrency_key, l.concurrency_seat`;
}
