-- Workflow job steps take a fairness key (issue 35): stored on the step, copied to its job when the step is
-- released (at run start, at release, at append), so the step's job takes its turns like a direct job's.
-- Two nullable columns without a default: no table rewrite. Adding the check reads workflow_steps once under the
-- ALTER's lock (every existing row passes: both columns NULL), as job_queue's did in 20270101000003.
ALTER TABLE "runledger"."workflow_steps"
    ADD COLUMN "fair_key" text,
    ADD COLUMN "fair_weight" integer,
    ADD CONSTRAINT "workflow_steps_fair_weight_check"
        CHECK (("fair_key" IS NULL AND "fair_weight" IS NULL) OR ("fair_key" IS NOT NULL AND "fair_weight" BETWEEN 1 AND 1000));

COMMENT ON COLUMN "runledger"."workflow_steps"."fair_key" IS
  'Fairness key of the step''s job (migration 20270101000004), copied to the job when the step is released. NULL: none.';
COMMENT ON COLUMN "runledger"."workflow_steps"."fair_weight" IS
  'Turns per round of the step job''s fairness key (1..1000), copied with the key; NULL without a key.';
