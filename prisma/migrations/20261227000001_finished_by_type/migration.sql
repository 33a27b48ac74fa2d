-- Finished jobs of one type, newest first (issue 23): the dashboard's jobs
-- page filtered to SUCCEEDED (or DEAD_LETTERED, CANCELED) of one type, and
-- listJobs with the same filter. Without it the list walks the primary key
-- from the newest id and filters, reading every newer row that does not
-- match first: 256 ms at 10M finished jobs behind a 1M backlog
-- (bench/README.md), more for a rare type. src/queue/finished-by-type.ts reads
-- this index backwards, one branch per status.
--
-- Partial over finished rows: a job gets its entry once, in the completion's
-- UPDATE (which changes `status`, so it is never HOT and already writes
-- job_queue_finished_status_idx's entry); enqueue, claim, heartbeat and retry
-- pay nothing. Built in the migration's transaction; on a very large history
-- a deployer may build it CONCURRENTLY beforehand (IF NOT EXISTS keeps it).
-- organization_id is included so the list's id scan (scope included) is index-only: selecting whole rows,
-- PostgreSQL 18 costed the primary key walk cheaper (it assumes matching rows spread evenly) and took it.
CREATE INDEX IF NOT EXISTS "job_queue_finished_type_idx" ON "runledger"."job_queue" ("job_type", "status", "id")
    INCLUDE ("organization_id")
    WHERE "status" IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED');
-- The index budget (migration 20261223000001_index_budget): the read it serves, in the catalog.
COMMENT ON INDEX "runledger"."job_queue_finished_type_idx" IS
  'Operator reads: listJobs (the dashboard''s jobs page, the CLI''s jobs list) of one type filtered to finished statuses, newest first (src/queue/finished-by-type.ts). One entry per finished job, written by its completion. Finished rows only.';
