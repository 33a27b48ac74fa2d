-- The worker registry, the failed attempt's stack, and the dead letters by type (issue 25).
--
-- 1. runledger.workers: one row per running createWorker, upserted by its
--    registry loop (src/worker/registry.ts) once per interval, never on the
--    job path, and deleted when it stops. `expires_at` is the last heartbeat
--    plus three intervals: a worker that crashed stops counting as live then,
--    and its row is deleted an hour later by any other worker's heartbeat,
--    so the table holds the live fleet plus the last hour's departures.
--    The dashboard's workers and queues pages read it (src/dashboard/fleet.ts).
CREATE TABLE "runledger"."workers" (
    "id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "job_types" TEXT[] NOT NULL,
    "concurrency" INTEGER NOT NULL,
    "in_flight" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(6) NOT NULL,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    CONSTRAINT "workers_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "workers_counts_check" CHECK ("concurrency" > 0 AND "in_flight" >= 0)
);

-- 2. The stack of the error a handler threw, stored with the attempt it
--    ended (never required: null when the worker had none), bounded by the
--    worker to MAX_ERROR_STACK_LENGTH characters (src/worker/job-errors.ts)
--    and by this CHECK.
ALTER TABLE "runledger"."job_attempts" ADD COLUMN "error_stack" TEXT;
ALTER TABLE "runledger"."job_attempts" ADD CONSTRAINT "job_attempts_error_stack_length_check" CHECK (char_length("error_stack") <= 8000);

-- 3. Bulk requeue of dead letters (src/replay/bulk-requeue.ts): an
--    organization's (or the rows without one's) direct dead letters, of a
--    type, oldest first, without reading other tenants' dead letters or the
--    finished history. Partial, so it costs one entry per direct job while it
--    is dead-lettered (a requeue or a purge removes it) and nothing on the
--    hot path. Built in the migration's transaction; on a table with very many
--    dead letters a deployer may build it CONCURRENTLY beforehand (IF NOT
--    EXISTS keeps it).
CREATE INDEX IF NOT EXISTS "job_queue_dead_letter_idx" ON "runledger"."job_queue" ("organization_id", "job_type", "finished_at", "id")
    WHERE "status" = 'DEAD_LETTERED' AND "workflow_step_id" IS NULL;
-- The index budget (migration 20261223000001_index_budget): the read it serves, in the catalog.
COMMENT ON INDEX "runledger"."job_queue_dead_letter_idx" IS
  'Operator reads: the bulk requeue of dead letters and its preview count (requeueDeadLetteredJobs, countDeadLetteredJobs, the dashboard''s dead-letters page), one organization and type, oldest first. Direct DEAD_LETTERED rows only.';
