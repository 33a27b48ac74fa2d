-- Queue metrics (src/metrics/queries.ts): finished jobs, direct and workflow,
-- by status and finish time. It lets the metrics read only their window
-- (finished in the last hour, dead-lettered in the last 24 hours, the latest
-- jobs for the duration percentiles) however much history the table holds.
--
-- Cost: one more index entry per job when it finishes (complete, fail to
-- DEAD_LETTERED, cancel), none on enqueue or claim (PENDING and LEASED rows
-- are outside the predicate). The existing job_queue_finished_direct_idx
-- cannot serve: it leaves workflow jobs out and has no status column.
--
-- Built in the migration's transaction (CONCURRENTLY cannot run in one): on a
-- table of millions of rows, writes to job_queue wait for the build (seconds
-- per million finished rows). A deployer who cannot pause writes may run this
-- statement with CONCURRENTLY beforehand: IF NOT EXISTS then keeps that index.
CREATE INDEX IF NOT EXISTS "job_queue_finished_status_idx" ON "runledger"."job_queue" ("status", "finished_at")
    WHERE "status" IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED');
