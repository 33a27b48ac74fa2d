-- Part 1. Cron schedules: one row per schedule key. The scheduler loop of every
-- worker claims due rows with FOR UPDATE SKIP LOCKED, enqueues the job of
-- each due slot with an idempotency key derived from the schedule key and the
-- slot time, and advances next_run_at in the same transaction
-- (src/schedules/run-due.ts).
--
-- organization_id is TEXT: organization ids are the host's own strings.
-- next_run_at is the next slot not yet materialised (always a slot of the
-- cron expression in the schedule's timezone, computed by the library);
-- a disabled schedule keeps it, and resuming recomputes it.
-- catch_up_max_slots: how many of the missed slots one pass materialises
-- after downtime (the latest ones); 1 by default.

CREATE TABLE "runledger"."job_schedules" (
    "id" UUID NOT NULL,
    "schedule_key" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "job_type" TEXT NOT NULL,
    "organization_id" TEXT,
    "payload" JSONB NOT NULL,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "max_attempts" INTEGER NOT NULL DEFAULT 5,
    "timeout_seconds" INTEGER NOT NULL DEFAULT 300,
    "resource_key" TEXT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "catch_up_max_slots" INTEGER NOT NULL DEFAULT 1,
    "next_run_at" TIMESTAMPTZ(6) NOT NULL,
    "last_slot_at" TIMESTAMPTZ(6),
    "last_job_id" UUID,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),

    CONSTRAINT "job_schedules_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "job_schedules_key_valid" CHECK (btrim("schedule_key") <> '' AND octet_length("schedule_key") <= 200),
    CONSTRAINT "job_schedules_job_type_valid" CHECK (btrim("job_type") <> ''),
    CONSTRAINT "job_schedules_max_attempts_positive" CHECK ("max_attempts" >= 1),
    CONSTRAINT "job_schedules_timeout_positive" CHECK ("timeout_seconds" >= 1),
    CONSTRAINT "job_schedules_catch_up_range" CHECK ("catch_up_max_slots" BETWEEN 1 AND 1000),
    CONSTRAINT "job_schedules_resource_key_valid"
        CHECK ("resource_key" IS NULL OR (btrim("resource_key") <> '' AND octet_length("resource_key") <= 512))
);

CREATE UNIQUE INDEX "job_schedules_schedule_key_key" ON "runledger"."job_schedules" ("schedule_key");

-- The scheduler's probe: enabled schedules in due order.
CREATE INDEX "job_schedules_due_idx" ON "runledger"."job_schedules" ("next_run_at", "id") WHERE "enabled";

-- Part 2. Retention (src/retention/purge.ts): purgeFinished walks finished
-- direct jobs and finished workflow runs in (finished_at, id) order, a small
-- batch per transaction. These partial indexes hold only finished rows, so
-- each batch is an index range scan however many rows the tables hold; the
-- cost is one index entry per job when it finishes.
CREATE INDEX "job_queue_finished_direct_idx" ON "runledger"."job_queue" ("finished_at", "id")
    WHERE "workflow_step_id" IS NULL AND "status" IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED');
CREATE INDEX "workflow_runs_finished_idx" ON "runledger"."workflow_runs" ("finished_at", "id")
    WHERE "status" IN ('SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED');
