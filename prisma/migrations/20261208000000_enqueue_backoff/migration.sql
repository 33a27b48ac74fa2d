-- A backoff per enqueue (or per workflow step): the retry delay policy stored
-- on the job row, which failJob uses over the backoff of the job type's
-- definition that the worker passes. NULL (the default, and every row written
-- before this migration): the definition's backoff applies, then the default.
--
-- Both columns are set together or not at all, each a positive int, and the
-- cap is at least the base. A workflow step carries the same pair, copied to
-- the step's job wherever the step's other settings are.

ALTER TABLE "runledger"."job_queue" ADD COLUMN "backoff_base_ms" INTEGER;
ALTER TABLE "runledger"."job_queue" ADD COLUMN "backoff_max_ms" INTEGER;
ALTER TABLE "runledger"."job_queue" ADD CONSTRAINT "job_queue_backoff_valid"
    CHECK (("backoff_base_ms" IS NULL AND "backoff_max_ms" IS NULL)
        OR ("backoff_base_ms" IS NOT NULL AND "backoff_max_ms" IS NOT NULL
            AND "backoff_base_ms" > 0 AND "backoff_max_ms" >= "backoff_base_ms"));
ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "backoff_base_ms" INTEGER;
ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "backoff_max_ms" INTEGER;
ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_backoff_valid"
    CHECK (("backoff_base_ms" IS NULL AND "backoff_max_ms" IS NULL)
        OR ("backoff_base_ms" IS NOT NULL AND "backoff_max_ms" IS NOT NULL
            AND "backoff_base_ms" > 0 AND "backoff_max_ms" >= "backoff_base_ms"));
