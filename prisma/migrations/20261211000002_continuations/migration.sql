-- Continuations: a handler may end a slice of a long job by asking for the
-- next one (continueNow / continueAfter). The same job goes back to PENDING
-- under run_number + 1 at attempt 0 with its checkpoint (job_queue.checkpoint,
-- already there) handed to the next slice. A direct job may always continue;
-- a workflow job step only when its step opted in at enqueue
-- (`allowContinuation`), because its dependents wait for a terminal outcome
-- that a continuing step puts off.

ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "allow_continuation" BOOLEAN NOT NULL DEFAULT false;
