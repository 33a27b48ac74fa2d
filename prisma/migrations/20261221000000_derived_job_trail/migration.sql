-- The lean trail, first step: a job's trail is no longer written twice.
--
-- Before, every enqueue, claim and completion appended job_events rows that
-- repeated what the job row and its attempt row already held: ENQUEUED (the
-- job's insert), LEASED and RUNNING (the attempt's opening), SUCCEEDED (the
-- attempt's close). Four of a drained job's nine row writes were those
-- copies. Now they are derived, and runledger.job_trail (below) reads the
-- trail as before: stored events plus the derived ones, in the same order,
-- with the same types, numbers, payloads and times.
--
-- What is derived, and from what:
--   ENQUEUED   a job with no stored ENQUEUED event: a plain enqueue (payload
--              null) or a workflow step's job ({workflowRunId, stepId,
--              stepKey}, from its step). Enqueues whose payload says more
--              (schedule, intent, replay, append lineage) still store it.
--   LEASED     an attempt with `leased_until` (the expiry its claim granted).
--   RUNNING    an attempt with `running_seq` (claimed with markRunning, or
--              markJobRunning later), at `running_at`.
--   SUCCEEDED  an attempt with `closed_seq` (the completion statement).
-- Every other event (failures, releases, reaping, cancellation, requeue,
-- continuation, stages, progress) is rare on the hot path and stays stored.
--
-- Order. A trail is ordered by `position`: a stored event's seq x 2; a
-- derived event's number from the same sequence x 2 (RUNNING + 1, so one
-- claimed with markRunning follows its LEASED at the same number); a
-- derived ENQUEUED is 0 (always a job's first event). Attempts now take
-- their seq from job_events' sequence, so an attempt's LEASED sits among
-- the job's stored events exactly where its event used to be. Derived ids
-- are md5-based UUIDs of (job, number, type): stable across reads, not
-- time-ordered like stored ones.
--
-- Existing history: stored events stay and are read as before (no derived
-- column is set on a closed attempt, and every existing job has its stored
-- ENQUEUED). Open attempts (live leases) move their stored RUNNING event
-- into the attempt, so "has this lease started" (reaping, markJobRunning)
-- reads one place only: the attempt.

ALTER TABLE "runledger"."job_attempts"
    ADD COLUMN "leased_until" TIMESTAMPTZ(6),
    ADD COLUMN "running_seq" BIGINT,
    ADD COLUMN "running_at" TIMESTAMPTZ(6),
    ADD COLUMN "closed_seq" BIGINT;

-- One sequence numbers a job's whole trail. It is ahead of the attempts'
-- own (each claim drew one of each, and enqueues draw events only), but
-- setval makes sure, so a new attempt still sorts after every old one.
SELECT setval('"runledger"."job_events_seq_seq"',
              GREATEST((SELECT last_value FROM "runledger"."job_events_seq_seq"),
                       (SELECT last_value FROM "runledger"."job_attempts_seq_seq")));
ALTER TABLE "runledger"."job_attempts" ALTER COLUMN "seq" SET DEFAULT nextval('"runledger"."job_events_seq_seq"');
ALTER SEQUENCE "runledger"."job_attempts_seq_seq" OWNED BY NONE;
DROP SEQUENCE "runledger"."job_attempts_seq_seq";

WITH open_running AS (
    SELECT a."job_id", a."seq", r."id" AS "event_id", r."seq" AS "running_seq", r."created_at" AS "running_at"
      FROM "runledger"."job_attempts" a
      JOIN LATERAL (
          SELECT max(le."seq") AS "seq" FROM "runledger"."job_events" le
           WHERE le."job_id" = a."job_id" AND le."event_type" = 'LEASED'
      ) l ON true
      JOIN LATERAL (
          SELECT e."id", e."seq", e."created_at" FROM "runledger"."job_events" e
           WHERE e."job_id" = a."job_id" AND e."event_type" = 'RUNNING' AND e."seq" > l."seq"
           ORDER BY e."seq" LIMIT 1
      ) r ON true
     WHERE a."finished_at" IS NULL
), moved AS (
    UPDATE "runledger"."job_attempts" a
       SET "running_seq" = o."running_seq", "running_at" = o."running_at"
      FROM open_running o
     WHERE a."job_id" = o."job_id" AND a."seq" = o."seq"
    RETURNING o."event_id"
)
DELETE FROM "runledger"."job_events" e USING moved m WHERE e."id" = m."event_id";

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
 WHERE NOT EXISTS (SELECT 1 FROM "runledger"."job_events" se
                    WHERE se."job_id" = j."id" AND se."event_type" = 'ENQUEUED')
UNION ALL
SELECT md5(a."job_id"::text || ':' || a."seq" || ':LEASED')::uuid, a."seq" * 2, a."job_id", 'LEASED'::"runledger"."job_event_type",
       a."run_number", a."attempt", jsonb_build_object('workerId', a."worker_id", 'leaseExpiresAt', a."leased_until"), a."started_at"
  FROM "runledger"."job_attempts" a
 WHERE a."leased_until" IS NOT NULL
UNION ALL
SELECT md5(a."job_id"::text || ':' || a."running_seq" || ':RUNNING')::uuid, a."running_seq" * 2 + 1, a."job_id",
       'RUNNING'::"runledger"."job_event_type", a."run_number", a."attempt", jsonb_build_object('workerId', a."worker_id"), a."running_at"
  FROM "runledger"."job_attempts" a
 WHERE a."running_seq" IS NOT NULL
UNION ALL
SELECT md5(a."job_id"::text || ':' || a."closed_seq" || ':SUCCEEDED')::uuid, a."closed_seq" * 2, a."job_id",
       'SUCCEEDED'::"runledger"."job_event_type", a."run_number", a."attempt", NULL::jsonb, a."finished_at"
  FROM "runledger"."job_attempts" a
 WHERE a."closed_seq" IS NOT NULL;

-- A SUCCEEDED event is derived only from a SUCCEEDED close, and a RUNNING
-- one only with its time. NOT VALID then VALIDATE: the check of existing
-- rows (all NULL here) takes no lock that blocks writers.
ALTER TABLE "runledger"."job_attempts"
    ADD CONSTRAINT "job_attempts_trail" CHECK (("closed_seq" IS NULL OR "outcome" = 'SUCCEEDED')
                                               AND (("running_seq" IS NULL) = ("running_at" IS NULL))) NOT VALID;
ALTER TABLE "runledger"."job_attempts" VALIDATE CONSTRAINT "job_attempts_trail";
