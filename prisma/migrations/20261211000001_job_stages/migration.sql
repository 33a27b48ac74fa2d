-- Stages: a short label saying which phase a job is in ("download",
-- "transform"), set at enqueue (a direct job, or a workflow job step, copied
-- to the step's job where the step's other settings are) and changed by the
-- running handler (ctx.setStage), which also records numeric progress
-- (ctx.progress, into the existing `progress` column). Each change appends a
-- STAGE_CHANGED or PROGRESS event in the same statement.
--
-- A stage is non-blank and at most 128 bytes.

ALTER TYPE "runledger"."job_event_type" ADD VALUE 'STAGE_CHANGED';
ALTER TYPE "runledger"."job_event_type" ADD VALUE 'PROGRESS';

ALTER TABLE "runledger"."job_queue" ADD COLUMN "stage" TEXT;
ALTER TABLE "runledger"."job_queue" ADD CONSTRAINT "job_queue_stage_valid"
    CHECK ("stage" IS NULL OR (octet_length("stage") <= 128 AND btrim("stage") <> ''));
ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "stage" TEXT;
ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_stage_valid"
    CHECK ("stage" IS NULL OR (octet_length("stage") <= 128 AND btrim("stage") <> ''));
