-- Schedules, second part (src/schedules/).
--
-- A schedule's target is a job (job_type + payload, as before) or a workflow
-- run (workflow_type + workflow_run: the run's plain-object input without
-- organization or idempotency key, which the scheduler supplies per slot).
-- Exactly one target per row.
ALTER TABLE "runledger"."job_schedules" ALTER COLUMN "job_type" DROP NOT NULL;
ALTER TABLE "runledger"."job_schedules" ALTER COLUMN "payload" DROP NOT NULL;
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "workflow_type" TEXT;
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "workflow_run" JSONB;
-- The run the latest slot made (last_job_id's counterpart; no foreign key, like last_job_id: purge may delete it).
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "last_workflow_run_id" UUID;
ALTER TABLE "runledger"."job_schedules" ADD CONSTRAINT "job_schedules_one_target" CHECK (
    ("job_type" IS NULL) <> ("workflow_type" IS NULL)
    AND ("job_type" IS NULL) = ("payload" IS NULL)
    AND ("workflow_type" IS NULL) = ("workflow_run" IS NULL));
ALTER TABLE "runledger"."job_schedules" ADD CONSTRAINT "job_schedules_workflow_type_valid"
    CHECK ("workflow_type" IS NULL OR btrim("workflow_type") <> '');

-- The last slot a scheduler pass could not materialise (its target refused:
-- invalid workflow, constraint violation), recorded instead of blocking the
-- other schedules of the pass; cleared by the next slot that succeeds.
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "last_error_code" TEXT;
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "last_error_message" TEXT;
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "last_error_at" TIMESTAMPTZ(6);

-- Schedules declared in a worker's options carry the declaring owner's tag,
-- so that worker may prune the ones it declared earlier and no longer does
-- (`pruneSchedules`). NULL: created by upsertSchedule, never pruned.
ALTER TABLE "runledger"."job_schedules" ADD COLUMN "declared_by" TEXT;
ALTER TABLE "runledger"."job_schedules" ADD CONSTRAINT "job_schedules_declared_by_valid"
    CHECK ("declared_by" IS NULL OR (btrim("declared_by") <> '' AND octet_length("declared_by") <= 200));
