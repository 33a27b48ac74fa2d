-- The lean ledger: each fact of a job's history is written once.
--
-- Before, a drained job wrote nine rows: its insert and an ENQUEUED event;
-- at claim its update, LEASED and RUNNING events and an attempt row; at
-- completion its update, a SUCCEEDED event and the attempt's close. The
-- events and the attempt repeated what the job row says. Now a drained job
-- writes three rows (insert, claim, completion), the peers' count:
--
-- 1. The job row holds its open attempt (attempt_* columns: the attempt's
--    trail number, worker, start, the lease expiry its claim granted, when it
--    started running) and, once SUCCEEDED, its last attempt (closed_seq).
--    Every other end of an attempt (retry, dead letter, release, reaping,
--    cancellation, continuation), all rare on the hot path, moves it into
--    job_attempts, with its outcome, in the statement that ends it, and
--    clears the job's columns. runledger.job_attempt_history (below) reads
--    both as the attempt history.
-- 2. The trail's hot events are derived, not stored; runledger.job_trail
--    (below) reads stored events plus the derived ones, in the same order,
--    with the same types, numbers, payloads and times:
--      ENQUEUED   a job with no stored ENQUEUED event: a plain enqueue
--                 (payload null) or a workflow step's job ({workflowRunId,
--                 stepId, stepKey}, from its step). Enqueues whose payload
--                 says more (schedule, intent, replay, append lineage) still
--                 store it.
--      LEASED     an attempt with its lease expiry (`leased_until`).
--      RUNNING    an attempt with `running_seq` (claimed with markRunning, or
--                 markJobRunning later), at `running_at`.
--      SUCCEEDED  the job row's attempt with `attempt_closed_seq`.
--    Every other event (failures, releases, reaping, cancellation, requeue,
--    continuation, stages, progress) stays stored.
--
-- Order. A trail is ordered by `position`: a stored event's seq x 2; a
-- derived event's number from the same sequence x 2 (RUNNING + 1, so one
-- claimed with markRunning follows its LEASED at the same number); a derived
-- ENQUEUED is 0 (always a job's first event). Attempts now take their number
-- from job_events' sequence, so an attempt's LEASED sits among the job's
-- stored events exactly where its event used to be. Derived ids are
-- md5-based UUIDs of (job, number, type): stable across reads, not
-- time-ordered like stored ones.
--
-- Existing history stays as it is and reads as before: closed attempts and
-- their stored events are untouched (none of the new columns is set on
-- them), and every existing job has its stored ENQUEUED. Open attempts (live
-- leases) move onto their job rows, their stored LEASED event staying stored
-- and their RUNNING event moving into the attempt, so "has this lease
-- started" (reaping, markJobRunning) reads one place only.

ALTER TABLE "runledger"."job_attempts"
    ADD COLUMN "leased_until" TIMESTAMPTZ(6),
    ADD COLUMN "running_seq" BIGINT,
    ADD COLUMN "running_at" TIMESTAMPTZ(6);

ALTER TABLE "runledger"."job_queue"
    ADD COLUMN "attempt_seq" BIGINT,
    ADD COLUMN "attempt_worker_id" TEXT,
    ADD COLUMN "attempt_started_at" TIMESTAMPTZ(6),
    ADD COLUMN "attempt_leased_until" TIMESTAMPTZ(6),
    ADD COLUMN "attempt_running_seq" BIGINT,
    ADD COLUMN "attempt_running_at" TIMESTAMPTZ(6),
    ADD COLUMN "attempt_closed_seq" BIGINT;

-- One sequence numbers a job's whole trail. It is ahead of the attempts'
-- own (each claim drew one of each, and enqueues draw events only), but
-- setval makes sure, so a new attempt still sorts after every old one.
SELECT setval('"runledger"."job_events_seq_seq"',
              GREATEST((SELECT last_value FROM "runledger"."job_events_seq_seq"),
                       (SELECT last_value FROM "runledger"."job_attempts_seq_seq")));
ALTER TABLE "runledger"."job_attempts" ALTER COLUMN "seq" SET DEFAULT nextval('"runledger"."job_events_seq_seq"');
ALTER SEQUENCE "runledger"."job_attempts_seq_seq" OWNED BY NONE;
DROP SEQUENCE "runledger"."job_attempts_seq_seq";

-- Open attempts of live leases move onto their job rows, with the RUNNING
-- event stored after the lease's LEASED event, if any.
WITH "open_attempts" AS (
    SELECT a."job_id", a."seq", a."worker_id", a."started_at", r."id" AS "running_event_id", r."seq" AS "running_seq", r."created_at" AS "running_at"
      FROM "runledger"."job_attempts" a
      JOIN "runledger"."job_queue" j ON j."id" = a."job_id" AND j."status" = 'LEASED'
      LEFT JOIN LATERAL (
          SELECT e."id", e."seq", e."created_at" FROM "runledger"."job_events" e
           WHERE e."job_id" = a."job_id" AND e."event_type" = 'RUNNING'
             AND e."seq" > (SELECT max(le."seq") FROM "runledger"."job_events" le WHERE le."job_id" = a."job_id" AND le."event_type" = 'LEASED')
           ORDER BY e."seq" LIMIT 1
      ) r ON true
     WHERE a."finished_at" IS NULL
), "moved" AS (
    UPDATE "runledger"."job_queue" j
       SET "attempt_seq" = o."seq", "attempt_worker_id" = o."worker_id", "attempt_started_at" = o."started_at",
           "attempt_running_seq" = o."running_seq", "attempt_running_at" = o."running_at"
      FROM "open_attempts" o
     WHERE j."id" = o."job_id"
), "running_events" AS (
    DELETE FROM "runledger"."job_events" e USING "open_attempts" o WHERE e."id" = o."running_event_id"
)
DELETE FROM "runledger"."job_attempts" a USING "open_attempts" o WHERE a."job_id" = o."job_id" AND a."seq" = o."seq";

-- The attempt history: the moved attempts, then the job row's (open, or the SUCCEEDED last one).
CREATE VIEW "runledger"."job_attempt_history" AS
SELECT a."job_id", a."seq", a."run_number", a."attempt", a."worker_id", a."started_at", a."finished_at", a."outcome",
       a."error_code", a."error_message", a."retry_delay_ms", a."retry_delay_source", a."requested_next_run_at", a."next_run_at",
       a."leased_until", a."running_seq", a."running_at", NULL::bigint AS "closed_seq"
  FROM "runledger"."job_attempts" a
UNION ALL
SELECT j."id", j."attempt_seq", j."run_number", j."attempt", j."attempt_worker_id", j."attempt_started_at",
       CASE WHEN j."status" = 'SUCCEEDED' THEN GREATEST(j."finished_at", j."attempt_started_at") END,
       CASE WHEN j."status" = 'SUCCEEDED' THEN 'SUCCEEDED'::"runledger"."job_attempt_outcome" END,
       NULL, NULL, NULL, NULL, NULL, NULL,
       j."attempt_leased_until", j."attempt_running_seq", j."attempt_running_at", j."attempt_closed_seq"
  FROM "runledger"."job_queue" j
 WHERE j."attempt_seq" IS NOT NULL;

-- Reads filter by job_id: PostgreSQL pushes that predicate into each branch
-- (job_events_job_idx, the job_queue and job_attempts primary keys).
CREATE VIEW "runledger"."job_trail" AS
SELECT e."id", e."seq" * 2 AS "position", e."job_id", e."event_type", e."run_number", e."attempt", e."payload", e."created_at"
  FROM "runledger"."job_events" e
UNION ALL
SELECT md5(j."id"::text || ':0:ENQUEUED')::uuid, 0::bigint, j."id", 'ENQUEUED'::"runledger"."job_event_type", 1, 0,
       CASE WHEN s."id" IS NOT NULL
            THEN jsonb_build_object('workflowRunId', s."workflow_run_id", 'stepId', s."id", 'stepKey', s."step_key") END,
       j."created_at"
  FROM "runledger"."job_queue" j
  LEFT JOIN "runledger"."workflow_steps" s ON s."id" = j."workflow_step_id"
 WHERE NOT EXISTS (SELECT 1 FROM "runledger"."job_events" se WHERE se."job_id" = j."id" AND se."event_type" = 'ENQUEUED')
UNION ALL
SELECT md5(h."job_id"::text || ':' || h."seq" || ':LEASED')::uuid, h."seq" * 2, h."job_id", 'LEASED'::"runledger"."job_event_type",
       h."run_number", h."attempt", jsonb_build_object('workerId', h."worker_id", 'leaseExpiresAt', h."leased_until"), h."started_at"
  FROM "runledger"."job_attempt_history" h
 WHERE h."leased_until" IS NOT NULL
UNION ALL
SELECT md5(h."job_id"::text || ':' || h."running_seq" || ':RUNNING')::uuid, h."running_seq" * 2 + 1, h."job_id",
       'RUNNING'::"runledger"."job_event_type", h."run_number", h."attempt", jsonb_build_object('workerId', h."worker_id"), h."running_at"
  FROM "runledger"."job_attempt_history" h
 WHERE h."running_seq" IS NOT NULL
UNION ALL
SELECT md5(j."id"::text || ':' || j."attempt_closed_seq" || ':SUCCEEDED')::uuid, j."attempt_closed_seq" * 2, j."id",
       'SUCCEEDED'::"runledger"."job_event_type", j."run_number", j."attempt", NULL::jsonb, j."finished_at"
  FROM "runledger"."job_queue" j
 WHERE j."attempt_closed_seq" IS NOT NULL;

-- The attempt columns move together; only a SUCCEEDED job keeps a closed
-- attempt on its row. NOT VALID then VALIDATE: the check of existing rows
-- takes no lock that blocks writers.
ALTER TABLE "runledger"."job_queue"
    ADD CONSTRAINT "job_queue_attempt_columns" CHECK (
        ("attempt_seq" IS NULL) = ("attempt_worker_id" IS NULL) AND ("attempt_seq" IS NULL) = ("attempt_started_at" IS NULL)
        AND ("attempt_running_seq" IS NULL) = ("attempt_running_at" IS NULL)
        AND ("attempt_closed_seq" IS NULL OR "status" = 'SUCCEEDED')) NOT VALID;
ALTER TABLE "runledger"."job_queue" VALIDATE CONSTRAINT "job_queue_attempt_columns";
ALTER TABLE "runledger"."job_attempts"
    ADD CONSTRAINT "job_attempts_running" CHECK (("running_seq" IS NULL) = ("running_at" IS NULL)) NOT VALID;
ALTER TABLE "runledger"."job_attempts" VALIDATE CONSTRAINT "job_attempts_running";
