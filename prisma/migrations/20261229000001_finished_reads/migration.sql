-- Finished jobs read without an index over SUCCEEDED rows (issue 34; bench/README.md, "A lifecycle that writes
-- few index entries").
--
-- job_counts: finished jobs per minute, job type, organization ('' for none), terminal status, kind (a
-- workflow step's job or a direct one) and shard. Every statement that finishes jobs (completion, failure to
-- dead letter, cancellation of a job or of a run's jobs, the reaper's dead letters) adds to it once, one
-- upsert in key order (src/queue/statements/finished-counts.ts; lock protocol in src/coordination/locking.ts);
-- the shard (the backend's pid modulo 16) keeps concurrent workers off one row. The metrics windows and the
-- dashboard's chart read it; counts are events (a job requeued and finished again counts twice) and outlive
-- purged jobs. Backfilled here from the last 24 hours of finished jobs (shard 0), the longest window read.
CREATE TABLE "runledger"."job_counts" (
    "minute"          timestamptz(6) NOT NULL,
    "job_type"        text NOT NULL,
    "organization_id" text NOT NULL,
    "status"          "runledger"."job_status" NOT NULL,
    "workflow"        boolean NOT NULL,
    "shard"           integer NOT NULL,
    "count"           bigint NOT NULL,
    CONSTRAINT "job_counts_pkey" PRIMARY KEY ("minute", "job_type", "organization_id", "status", "workflow", "shard")
);
COMMENT ON TABLE "runledger"."job_counts" IS
  'Finished jobs per minute, type, organization ('''' for none), terminal status, kind and shard (migration 20261229000001): the metrics windows and the dashboard''s throughput chart. Added to by every terminal statement; readers sum the shards.';

INSERT INTO "runledger"."job_counts" ("minute", "job_type", "organization_id", "status", "workflow", "shard", "count")
SELECT date_trunc('minute', jq."finished_at"), jq."job_type", COALESCE(jq."organization_id", ''), jq."status",
       jq."workflow_step_id" IS NOT NULL, 0, count(*)
  FROM "runledger"."job_queue" jq
 WHERE jq."status" IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED') AND jq."finished_at" >= now() - interval '24 hours'
 GROUP BY 1, 2, 3, 4, 5;

-- No index over SUCCEEDED rows, and none that names status or finished_at: a completion (LEASED -> SUCCEEDED,
-- finished_at set) then changes no column an index of job_queue names in this part of the schema (the lease
-- index is the lease table's migration's to drop), so it can be a HOT update. Their readers moved:
--   job_queue_finished_status_idx ((status, finished_at) over finished jobs): the metrics windows, the
--     overview's and queues page's finished counts and the throughput chart read job_counts;
--     getQueueMetrics' latest durations walk the primary key newest first (src/metrics/queries.ts);
--   job_queue_finished_direct_idx ((finished_at, id) over direct finished jobs): purgeFinished walks the
--     primary key in id order, bounded by the cutoff's UUIDv7 (src/retention/purge.ts);
--   job_queue_finished_type_idx ((job_type, status, id) over finished jobs): the finished-by-type lists read
--     the two indexes below.
DROP INDEX "runledger"."job_queue_finished_status_idx";
DROP INDEX "runledger"."job_queue_finished_direct_idx";
DROP INDEX "runledger"."job_queue_finished_type_idx";

-- Jobs ever claimed in their run, by type, newest first. Partial on `attempt`, which the claim sets and a
-- completion leaves alone, so its entry is written once by the claim (a non-HOT update anyway: it leaves the
-- claim index), never by the completion. Not `attempt_seq`: SUCCEEDED rows finished before migration
-- 20261222000000_lean_ledger have none. It holds LEASED and retried rows too; the list reads the status on
-- the row.
CREATE INDEX "job_queue_claimed_type_idx" ON "runledger"."job_queue" ("job_type", "id") INCLUDE ("organization_id")
    WHERE "attempt" > 0;
-- Dead-lettered and canceled jobs by type, newest first, each under its generated marker (migration
-- 20261228000000): written by those rare transitions only, and read index-only.
CREATE INDEX "job_queue_dead_letter_type_idx" ON "runledger"."job_queue" ("job_type", "id") INCLUDE ("organization_id")
    WHERE "dead_lettered_at" IS NOT NULL;
CREATE INDEX "job_queue_canceled_type_idx" ON "runledger"."job_queue" ("job_type", "id") INCLUDE ("organization_id")
    WHERE "canceled_at" IS NOT NULL;
-- Dead letters by their finish time across types and organizations (the dashboard's newest failures, a
-- window of the last day): the finished-status index this migration drops served that read.
CREATE INDEX "job_queue_dead_lettered_at_idx" ON "runledger"."job_queue" ("dead_lettered_at", "id")
    WHERE "dead_lettered_at" IS NOT NULL;
COMMENT ON INDEX "runledger"."job_queue_dead_lettered_at_idx" IS
  'Operator reads: dead letters newest first by finish time over every type (the dashboard''s needs-attention failure groups of the last 24 h). Written only when a job dead-letters.';
COMMENT ON INDEX "runledger"."job_queue_claimed_type_idx" IS
  'Operator reads: the finished-by-type list of SUCCEEDED jobs (listJobs with one type and finished statuses; the dashboard''s and CLI''s jobs lists), newest first. Rows claimed at least once in their run (attempt > 0).';
COMMENT ON INDEX "runledger"."job_queue_dead_letter_type_idx" IS
  'Operator reads: the finished-by-type list of DEAD_LETTERED jobs (listJobs with one type and finished statuses), newest first. Dead letters only.';
COMMENT ON INDEX "runledger"."job_queue_canceled_type_idx" IS
  'Operator reads: the finished-by-type list of CANCELED jobs (listJobs with one type and finished statuses), newest first. Canceled jobs only.';

-- Room on each page for a row's next version, so a completion's can be HOT (it must fit on the same page).
-- A fillfactor applies to pages filled from now on: existing pages stay as full as they are until their rows
-- are updated or purged (VACUUM FULL or pg_repack would apply it to them at once, with their own locks).
-- The table's pages hold half as many new rows: the finished history takes up to twice the room.
ALTER TABLE "runledger"."job_queue" SET (fillfactor = 50);
