-- Debounce and throttle at enqueue (issue 35): one small row per (job type, organization, kind, key) that
-- names the job of the key's current window. Concurrent enqueues of one key serialise on this row (FOR
-- UPDATE, then the job row: src/queue/statements/enqueue-windows.ts, src/coordination/locking.ts), so a
-- window never gets two jobs.
--
--   DEBOUNCE: the job stays in its window while it is PENDING and no attempt of it has started
--             (attempt = 0, run 1); each request in the window replaces its payload and settings and pushes
--             its due time to now + windowMs, never past `closes_at` (the opening request's time + maxWaitMs;
--             NULL: no cap).
--   THROTTLE: the job is the window's until `closes_at` (the opening request's time + windowMs); requests
--             before then return it and write nothing.
--
-- `waiting_until` is the debounce job's due time as this row last set it, for getQueueMetrics: the partial
-- index below holds debounce rows only, so counting the jobs that wait for a window reads the windows still
-- ahead of the clock, not every key ever used. A throttle row never changes it.
--
-- Retention: a window row goes with its job (the statement-level trigger below, as job_events and
-- job_attempts do), so the table holds at most one row per key whose last job is still kept.
CREATE TYPE "runledger"."enqueue_window_kind" AS ENUM ('DEBOUNCE', 'THROTTLE');

CREATE TABLE "runledger"."enqueue_windows" (
    "job_type" TEXT NOT NULL,
    -- The job's organization id; '' for a job without one (a blank organization is refused at every surface).
    "organization_key" TEXT NOT NULL,
    "kind" "runledger"."enqueue_window_kind" NOT NULL,
    "window_key" TEXT NOT NULL,
    "job_id" UUID NOT NULL,
    "opened_at" TIMESTAMPTZ(6) NOT NULL,
    "closes_at" TIMESTAMPTZ(6),
    "waiting_until" TIMESTAMPTZ(6),
    CONSTRAINT "enqueue_windows_pkey" PRIMARY KEY ("job_type", "organization_key", "kind", "window_key"),
    CONSTRAINT "enqueue_windows_throttle_closes" CHECK ("kind" <> 'THROTTLE' OR ("closes_at" IS NOT NULL AND "waiting_until" IS NULL))
);
-- The job read model (a job's window key) and the trigger below find a job's window by it.
CREATE INDEX "enqueue_windows_job_id_idx" ON "runledger"."enqueue_windows" ("job_id");
-- getQueueMetrics' debounce waits: the debounce windows whose job was last due ahead of now.
CREATE INDEX "enqueue_windows_waiting_idx" ON "runledger"."enqueue_windows" ("waiting_until")
    WHERE "kind" = 'DEBOUNCE';

-- Deleting jobs deletes their windows, once per statement. SKIP LOCKED: a purge never waits for a lock. A row
-- it skips is held by an enqueue of that key, which either points it at a new job or leaves it naming a job
-- that is gone, which the next enqueue of the key reads as a closed window and replaces.
CREATE FUNCTION "runledger"."delete_job_windows"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "runledger"."enqueue_windows" w
     WHERE w.ctid IN (SELECT x.ctid FROM "runledger"."enqueue_windows" x
                       WHERE x."job_id" IN (SELECT d."id" FROM deleted_jobs d)
                         FOR UPDATE SKIP LOCKED);
    RETURN NULL;
END
$$;
CREATE TRIGGER "job_queue_delete_windows" AFTER DELETE ON "runledger"."job_queue"
    REFERENCING OLD TABLE AS deleted_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION "runledger"."delete_job_windows"();
