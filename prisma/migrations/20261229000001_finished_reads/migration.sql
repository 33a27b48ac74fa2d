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
