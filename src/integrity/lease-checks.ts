/**
 * Integrity of the lease rows (runledger.job_leases, migration 20261229000000_job_leases), the reverse of
 * job-checks.ts's `job.lease_row_missing`: every lease row names a job that holds it. A live row's job is
 * LEASED with that expiry and resource key; a canceled row's job, until the row runs out, is CANCELED with
 * that expiry (a run-out canceled row only waits for the reaper's sweep). Paged by the primary key, one
 * probe of job_queue's primary key per row. A row whose job is gone belongs to no organization: only the
 * admin scope sees it.
 */
import type { Tx } from '../client/types.js';
import { inScope, type ScopeParams } from '../db/fragments.js';
import type { ViolationRow } from './violations.js';

/** A position in job_leases' primary key order (the expiry as UTC ISO text, microseconds kept). */
export interface LeaseKey {
  expiresAt: string;
  jobId: string;
}

/** Below every lease row. */
export const FIRST_LEASE_KEY: LeaseKey = { expiresAt: '-infinity', jobId: '00000000-0000-0000-0000-000000000000' };

export interface LeasePage {
  violations: ViolationRow[];
  /** The last row's key, or null when the page was empty. */
  last: LeaseKey | null;
  size: number;
}

export async function checkLeaseRows(tx: Tx, scope: ScopeParams, after: LeaseKey, limit: number): Promise<LeasePage> {
  const rows = await tx.$queryRaw<(ViolationRow & { key_expires_at: string; key_job_id: string; broken: boolean })[]>`
    WITH page AS MATERIALIZED (
      SELECT l.expires_at, l.job_id, l.resource_key, l.concurrency_key, l.canceled,
             to_char(l.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key_expires_at
        FROM runledger.job_leases l
       WHERE (l.expires_at, l.job_id) > (${after.expiresAt}::timestamptz, ${after.jobId}::uuid)
       ORDER BY l.expires_at, l.job_id
       LIMIT ${limit}::int
    )
    SELECT 'lease.job_mismatch' AS kind, ws.workflow_run_id, jq.workflow_step_id AS step_id, ws.step_key, p.job_id::text AS job_id,
           CASE WHEN p.canceled
                THEN jsonb_build_object('status', 'CANCELED', 'leaseExpiresAt', p.expires_at)
                ELSE jsonb_build_object('status', 'LEASED', 'leaseExpiresAt', p.expires_at, 'resourceKey', p.resource_key,
                                        'concurrencyKey', p.concurrency_key) END AS expected,
           jsonb_build_object('jobExists', jq.id IS NOT NULL, 'status', jq.status, 'leaseExpiresAt', jq.lease_expires_at,
                              'resourceKey', jq.resource_key, 'concurrencyKey', jq.concurrency_key, 'canceledLease', p.canceled) AS found,
           p.key_expires_at, p.job_id::text AS key_job_id,
           CASE WHEN NOT p.canceled
                THEN jq.id IS NULL OR jq.status <> 'LEASED' OR jq.lease_expires_at IS DISTINCT FROM p.expires_at
                     OR jq.resource_key IS DISTINCT FROM p.resource_key OR jq.concurrency_key IS DISTINCT FROM p.concurrency_key
                ELSE p.expires_at > now()
                     AND (jq.id IS NULL OR jq.status <> 'CANCELED' OR jq.lease_expires_at IS DISTINCT FROM p.expires_at) END
           AND CASE WHEN jq.id IS NULL THEN ${scope.all}::boolean ELSE ${inScope(scope, 'jq.organization_id')} END AS broken
      FROM page p
      LEFT JOIN runledger.job_queue jq ON jq.id = p.job_id
      LEFT JOIN runledger.workflow_steps ws ON ws.id = jq.workflow_step_id
     ORDER BY p.expires_at, p.job_id`;
  // Every row of the page comes back (the keyset moves past it); only the broken ones in scope are reported.
  const last = rows.at(-1);
  return {
    violations: rows.filter((row) => row.broken).map(({ key_expires_at: _e, key_job_id: _j, broken: _b, ...violation }) => violation),
    last: last ? { expiresAt: last.key_expires_at, jobId: last.key_job_id } : null,
    size: rows.length,
  };
}

/**
 * Concurrency keys' seats (migration 20270101000006_concurrency_seats), one page of keys after `after` in key
 * order: seats 1..seats of a key are each either free (a concurrency_seats row) or held by one lease row (live,
 * or canceled and not yet swept), never both, never by two, so free + held = seats. Read through the lease rows
 * and free seats of the page's keys (job_leases holds live leases only: the fleet's size).
 */
export async function checkConcurrencyCounts(tx: Tx, after: string, limit: number): Promise<{ violations: ViolationRow[]; last: string | null; size: number }> {
  const rows = await tx.$queryRaw<(ViolationRow & { key: string; broken: boolean })[]>`
    WITH page AS MATERIALIZED (
      SELECT k.key, k.seats FROM runledger.concurrency_limits k
       WHERE k.key > ${after}
       ORDER BY k.key
       LIMIT ${limit}::int
    ),
    held AS (
      SELECT l.concurrency_key AS key, count(*)::int AS n,
             (count(*) - count(DISTINCT l.concurrency_seat))::int AS doubled,
             count(*) FILTER (WHERE l.concurrency_seat IS NULL OR EXISTS (
               SELECT 1 FROM runledger.concurrency_seats s WHERE s.key = l.concurrency_key AND s.seat = l.concurrency_seat)
             )::int AS unseated
        FROM runledger.job_leases l
       WHERE l.concurrency_key IN (SELECT key FROM page)
       GROUP BY l.concurrency_key
    ),
    free AS (
      SELECT s.key, count(*)::int AS n FROM runledger.concurrency_seats s WHERE s.key IN (SELECT key FROM page) GROUP BY s.key
    )
    SELECT 'concurrency.leased_count' AS kind, NULL::uuid AS workflow_run_id, NULL::uuid AS step_id, NULL::text AS step_key,
           NULL::text AS job_id, jsonb_build_object('key', p.key, 'seats', p.seats) AS expected,
           jsonb_build_object('key', p.key, 'free', COALESCE(f.n, 0), 'leased', COALESCE(h.n, 0),
                              'leasesOnFreeOrNoSeat', COALESCE(h.unseated, 0), 'leasesSharingASeat', COALESCE(h.doubled, 0)) AS found,
           p.key,
           COALESCE(f.n, 0) + COALESCE(h.n, 0) <> p.seats OR COALESCE(h.unseated, 0) > 0 OR COALESCE(h.doubled, 0) > 0 AS broken
      FROM page p
      LEFT JOIN held h ON h.key = p.key
      LEFT JOIN free f ON f.key = p.key
     ORDER BY p.key`;
  const last = rows.at(-1);
  return {
    violations: rows.filter((row) => row.broken).map(({ key: _k, broken: _b, ...violation }) => violation),
    last: last ? last.key : null,
    size: rows.length,
  };
}
