-- Durable functions (issue 37, docs/concepts/durable-functions.md): a function
-- run is a workflow run whose `$function` JOB step runs the body; each step the
-- body finishes is a workflow_steps row of the new kind FUNCTION, inserted
-- SUCCEEDED with its output and `call_index`, the order the body called it in
-- (replay compares each call with the row at its index).
--
-- Cost: a new enum value (no rewrite) and a nullable column without default
-- (catalog only, no rewrite); no index: the only read of `call_index` is the
-- run's FUNCTION rows through workflow_steps_run_key_key's (workflow_run_id, ...)
-- prefix. FUNCTION rows satisfy workflow_steps_kind_settings' non-JOB branch
-- (no job, no job settings). The new value cannot be referenced in this
-- transaction (PostgreSQL refuses an uncommitted enum value), so the CHECK
-- below names only the column.
ALTER TYPE "runledger"."workflow_step_execution_kind" ADD VALUE IF NOT EXISTS 'FUNCTION';

ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "call_index" INTEGER;
ALTER TABLE "runledger"."workflow_steps"
    ADD CONSTRAINT "workflow_steps_call_index_valid" CHECK ("call_index" IS NULL OR "call_index" >= 0);
