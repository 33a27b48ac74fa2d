-- Durable waits of durable functions (issue 37, docs/concepts/durable-functions.md): signals and child runs.
--
-- workflow_signals: the mailbox of a function run. `signal(db, runId, name, payload)` inserts one row; a
-- `ctx.waitForSignal(name)` consumes the oldest unconsumed row of that name (by `seq`, the order the sends
-- took the run's body job row lock in), marking it with the wait's step. A signal sent while a wait of its
-- name is open is inserted already consumed by that wait. Purged with its run (ON DELETE CASCADE).
-- Indexes: the mailbox (unconsumed rows per run and name, in order) and the send's idempotency key per run.
--
-- job_queue.wake_requested_at: set by a signal that resolved a wait while the function's body job was
-- LEASED (its attempt may be about to suspend on that very wait). The continuation statement reads it on
-- the row it locks and, when it is not older than the attempt, makes the job due at once instead of at the
-- wait's timeout. A nullable column without default (catalog only, no rewrite), in no index (its update is
-- HOT-eligible).
CREATE TABLE "runledger"."workflow_signals" (
    "id"                  uuid NOT NULL,
    "seq"                 BIGSERIAL NOT NULL,
    "workflow_run_id"     uuid NOT NULL,
    "organization_id"     text,
    "name"                text NOT NULL,
    "payload"             jsonb NOT NULL,
    "idempotency_key"     text,
    "created_at"          timestamptz(6) NOT NULL DEFAULT now(),
    "consumed_by_step_id" uuid,
    "consumed_at"         timestamptz(6),
    CONSTRAINT "workflow_signals_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "workflow_signals_run_fkey" FOREIGN KEY ("workflow_run_id")
        REFERENCES "runledger"."workflow_runs" ("id") ON DELETE CASCADE ON UPDATE NO ACTION,
    CONSTRAINT "workflow_signals_consumed_together" CHECK (("consumed_by_step_id" IS NULL) = ("consumed_at" IS NULL))
);

CREATE UNIQUE INDEX "workflow_signals_idempotency_key" ON "runledger"."workflow_signals" ("workflow_run_id", "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;
CREATE INDEX "workflow_signals_mailbox" ON "runledger"."workflow_signals" ("workflow_run_id", "name", "seq")
    WHERE "consumed_by_step_id" IS NULL;

ALTER TABLE "runledger"."job_queue" ADD COLUMN "wake_requested_at" timestamptz(6);

-- workflow_runs.parent_job_id: a child run started by a durable function (`ctx.invoke`) names its parent's
-- body job; the run-status recompute that makes the child terminal wakes that job (src/coordination/
-- function-wake.ts). No foreign key (the parent may be purged first: the wake then finds no row), no index
-- (read only from the child's own row). Catalog only, no rewrite.
ALTER TABLE "runledger"."workflow_runs" ADD COLUMN "parent_job_id" uuid;
