-- Workflow recovery (src/recovery/): a terminal run is never reopened; a new
-- run is built from the source's canonical enqueue snapshot plus its appends.
--
-- 1. Every run stores its canonical enqueue snapshot from now on, not only
--    runs with an idempotency key: the pair CHECK becomes "a key needs a
--    snapshot". Runs enqueued before this migration without a key have none,
--    and recovering them is refused (`workflow.recovery_snapshot_missing`).
-- 2. `workflow_recoveries`: one row per (source run, request key), naming the
--    recovery run, the request's fingerprint, reason and mode. Both runs are
--    RESTRICTed: neither can be deleted while the row exists, so a lineage is
--    only ever deleted whole (retention deletes the rows first, in the batch
--    that deletes every run of the lineage).

ALTER TABLE "runledger"."workflow_runs" DROP CONSTRAINT "workflow_runs_idempotency_pair";
ALTER TABLE "runledger"."workflow_runs" ADD CONSTRAINT "workflow_runs_idempotency_pair" CHECK (
    ("idempotency_key" IS NULL OR "enqueue_request" IS NOT NULL)
    AND ("idempotency_key" IS NULL OR (btrim("idempotency_key") <> '' AND octet_length("idempotency_key") <= 512)));

CREATE TYPE "runledger"."workflow_recovery_mode" AS ENUM ('FULL', 'FAILED_ONLY');

CREATE TABLE "runledger"."workflow_recoveries" (
    "source_run_id" UUID NOT NULL,
    "request_key" TEXT NOT NULL,
    "recovery_run_id" UUID NOT NULL,
    "request_hash" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "mode" "runledger"."workflow_recovery_mode" NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_recoveries_pkey" PRIMARY KEY ("source_run_id", "request_key"),
    CONSTRAINT "workflow_recoveries_key_valid" CHECK (btrim("request_key") <> '' AND octet_length("request_key") <= 512),
    CONSTRAINT "workflow_recoveries_reason_not_blank" CHECK (btrim("reason") <> ''),
    CONSTRAINT "workflow_recoveries_hash_valid" CHECK ("request_hash" ~ '^[0-9a-f]{64}$'),
    CONSTRAINT "workflow_recoveries_not_self" CHECK ("source_run_id" <> "recovery_run_id")
);

-- A recovery run has exactly one source; lineage reads go both ways.
CREATE UNIQUE INDEX "workflow_recoveries_recovery_run_id_key" ON "runledger"."workflow_recoveries" ("recovery_run_id");
CREATE INDEX "workflow_recoveries_source_created_idx" ON "runledger"."workflow_recoveries" ("source_run_id", "created_at", "recovery_run_id");

ALTER TABLE "runledger"."workflow_recoveries" ADD CONSTRAINT "workflow_recoveries_source_run_id_fkey"
    FOREIGN KEY ("source_run_id") REFERENCES "runledger"."workflow_runs"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "runledger"."workflow_recoveries" ADD CONSTRAINT "workflow_recoveries_recovery_run_id_fkey"
    FOREIGN KEY ("recovery_run_id") REFERENCES "runledger"."workflow_runs"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
