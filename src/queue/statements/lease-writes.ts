/**
 * The writes of a held lease that keep it (src/queue/lifecycle.ts runs them): mark running and heartbeat,
 * each fenced at the lease clock.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { leaseFence, lockedLeaseAndClock, type LeaseName } from '../../db/fragments.js';
import { jsonParam } from '../../model/job-rows.js';
import type { JsonValue } from '../../model/json.js';
import { LEASE_ROW_KEY, moveLeaseRows } from './lease-rows.js';

/** Records that the handler started: the lease's RUNNING, once per attempt (src/queue/lifecycle.ts). */
export function markJobRunningStatement(l: LeaseName): Sql {
  return sqltag`
      WITH ${lockedLeaseAndClock(l)},
      running AS (
        UPDATE runledger.job_queue jq
           SET started_at = COALESCE(jq.started_at, c.at), heartbeat_at = c.at, updated_at = c.at,
               -- The trail's RUNNING event, once per lease: a released attempt is claimed again under the same
               -- attempt number but opens a new attempt, whose running columns are NULL (the reaper reads
               -- "started" from them too). See src/queue/attempt-row.ts.
               attempt_running_seq = CASE WHEN jq.attempt_running_seq IS NULL AND jq.attempt_seq IS NOT NULL
                                          THEN nextval('runledger.job_events_seq_seq') ELSE jq.attempt_running_seq END,
               attempt_running_at = CASE WHEN jq.attempt_running_seq IS NULL AND jq.attempt_seq IS NOT NULL
                                         THEN c.at ELSE jq.attempt_running_at END
          FROM clock c
         WHERE ${leaseFence(l, sqltag`c.at`)}
        RETURNING jq.id, jq.run_number, jq.attempt, jq.workflow_step_id,
                  jq.workflow_step_id IS NOT NULL AS workflow_managed
      )
      SELECT workflow_managed FROM running`;
}

/** Extends the lease by `leaseSeconds` (null: the current grant's length) and saves what `save` gives (src/queue/lifecycle.ts). */
export function heartbeatJobStatement(
  l: LeaseName,
  leaseSeconds: number | null,
  save: { progress?: JsonValue | null | undefined; checkpoint?: JsonValue | null | undefined },
): Sql {
  return sqltag`
      WITH ${lockedLeaseAndClock(l, sqltag`, ${LEASE_ROW_KEY}`)},
      -- The lease row moves with the job row's expiry, in the same statement (src/queue/statements/lease-rows.ts).
      beat AS (
        UPDATE runledger.job_queue jq
           SET lease_expires_at = c.at + COALESCE(make_interval(secs => ${leaseSeconds}::int),
                                                  jq.lease_expires_at - jq.heartbeat_at,
                                                  make_interval(secs => jq.timeout_seconds)),
               heartbeat_at = c.at,
               progress = CASE WHEN ${save.progress !== undefined}::boolean THEN ${jsonParam(save.progress)}::jsonb ELSE jq.progress END,
               checkpoint = CASE WHEN ${save.checkpoint !== undefined}::boolean THEN ${jsonParam(save.checkpoint)}::jsonb ELSE jq.checkpoint END,
               updated_at = c.at
          FROM clock c
         WHERE ${leaseFence(l, sqltag`c.at`)}
        RETURNING jq.id, jq.lease_expires_at
      ),
      moved AS (${moveLeaseRows(sqltag`(SELECT w.id, w.lease_expires_at, k.lease_row_expires_at FROM beat w JOIN locked k ON k.id = w.id)`)})
      SELECT lease_expires_at FROM beat`;
}
