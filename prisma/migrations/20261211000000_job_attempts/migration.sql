-- Attempt history: one row per lease of a job (an attempt), opened by the
-- claim statement that grants the lease and closed by the statement that
-- ends it (completion, failure, release, reaping, cancellation,
-- continuation), so the history is written in the transition's own
-- statement and costs no round trip.
--
-- `seq` orders a job's attempts (a released attempt is claimed again under
-- the same attempt number, so (run_number, attempt) is not unique). An open
-- attempt has neither `finished_at` nor `outcome`; at most one is open per
-- job (the integrity checker's job.attempt_open_count). The primary key is
-- the only index, on purpose: the closing statements find the open attempt
-- through its (job_id) prefix among the job's few attempts, and closing one
-- changes no indexed column, so with the page room fillfactor leaves it is a
-- HOT update that writes no index entry. A partial unique index over open
-- attempts cost an index insert per claim and made every close a non-HOT
-- update: about a third more time per job on a claim + batch-complete loop.
-- The retry columns describe a FAILED_RETRY (and the next run time a
-- CONTINUED or retried LEASE_EXPIRED attempt got): the delay and where it
-- came from (POLICY: the backoff; HANDLER_NOT_BEFORE: the handler's
-- retry-not-before came later than the backoff), the time the handler asked
-- for, and the time the job became runnable again.
--
-- No foreign key to job_queue, like job_events (a per-row RI check on the
-- claim path): a statement-level trigger deletes a job's attempts with it.

CREATE TYPE "runledger"."job_attempt_outcome" AS ENUM (
  'SUCCEEDED', 'FAILED_RETRY', 'DEAD_LETTERED', 'RELEASED', 'LEASE_EXPIRED', 'CANCELED', 'CONTINUED'
);
CREATE TYPE "runledger"."job_retry_delay_source" AS ENUM ('POLICY', 'HANDLER_NOT_BEFORE');

CREATE TABLE "runledger"."job_attempts" (
    "job_id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "run_number" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "worker_id" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL,
    "finished_at" TIMESTAMPTZ(6),
    "outcome" "runledger"."job_attempt_outcome",
    "error_code" TEXT,
    "error_message" TEXT,
    "retry_delay_ms" BIGINT,
    "retry_delay_source" "runledger"."job_retry_delay_source",
    "requested_next_run_at" TIMESTAMPTZ(6),
    "next_run_at" TIMESTAMPTZ(6),
    CONSTRAINT "job_attempts_pkey" PRIMARY KEY ("job_id", "seq"),
    CONSTRAINT "job_attempts_closed" CHECK (("finished_at" IS NULL) = ("outcome" IS NULL)),
    CONSTRAINT "job_attempts_numbers" CHECK ("run_number" >= 1 AND "attempt" >= 1)
) WITH (fillfactor = 80);

CREATE FUNCTION "runledger"."delete_job_attempts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "runledger"."job_attempts" a USING deleted_jobs d WHERE a."job_id" = d."id";
    RETURN NULL;
END
$$;
CREATE TRIGGER "job_queue_delete_attempts" AFTER DELETE ON "runledger"."job_queue"
    REFERENCING OLD TABLE AS deleted_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION "runledger"."delete_job_attempts"();
