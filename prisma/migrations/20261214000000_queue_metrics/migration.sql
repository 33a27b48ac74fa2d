-- Queue metrics (src/metrics/queries.ts): finished jobs, direct and workflow,
-- by status and finish time. It lets the metrics read only their window
-- (finished in the last hour, dead-lettered in the last 24 hours, the latest
-- jobs for the duration percentiles) however much history the table holds.
--
-- Cost: one more index entry per job when it finishes (complete, fail to
-- DEAD_LETTERED, cancel), none on enqueue or claim (PENDING and LEASED rows
-- are outside the predicate). The existing job_queue_finished_direct_idx
-- cannot serve: it leaves workflow jobs out and has no status column.
CREATE INDEX "job_queue_finished_status_idx" ON "runledger"."job_queue" ("status", "finished_at")
    WHERE "status" IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED');
