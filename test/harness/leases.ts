/**
 * Moving a lease's expiry in a test (instead of sleeping through a short lease): the job row's
 * `lease_expires_at` and its lease row (runledger.job_leases, keyed by that expiry) move together, as a
 * heartbeat moves them, so the reaper, the claim's resource rule and verifyIntegrity see one lease.
 */
import type { Tx } from '../../src/client/types.js';

/**
 * Sets the lease of each job in `jobIds` to expire at now() + `offset` (default '-1 second': run out), and
 * `heartbeat_at` to now() + `heartbeatOffset` when given. A CANCELED job's canceled lease row moves too.
 */
export async function setLeaseExpiry(db: Tx, jobIds: string | readonly string[], offset = '-1 second', heartbeatOffset?: string): Promise<void> {
  const ids = typeof jobIds === 'string' ? [jobIds] : [...jobIds];
  await db.$executeRaw`
    WITH old AS (SELECT jq.id, jq.lease_expires_at FROM runledger.job_queue jq WHERE jq.id = ANY(${ids}::uuid[]) FOR UPDATE),
    moved AS (
      UPDATE runledger.job_queue jq
         SET lease_expires_at = now() + ${offset}::interval,
             heartbeat_at = CASE WHEN ${heartbeatOffset ?? null}::interval IS NULL THEN jq.heartbeat_at ELSE now() + ${heartbeatOffset ?? null}::interval END
        FROM old o WHERE jq.id = o.id
      RETURNING jq.id, jq.lease_expires_at
    )
    UPDATE runledger.job_leases l SET expires_at = m.lease_expires_at
      FROM old o JOIN moved m ON m.id = o.id
     WHERE l.job_id = o.id AND l.expires_at = o.lease_expires_at`;
}

/** Runs the leases of `jobIds` out: their expiry one second (or `ago`) in the past. */
export function expireLeases(db: Tx, jobIds: string | readonly string[], ago = '1 second'): Promise<void> {
  return setLeaseExpiry(db, jobIds, `-${ago}`);
}
