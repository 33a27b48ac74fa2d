-- Execution resources: at most one LEASED job per resource key, across
-- workers, job types and organizations ("never two calls against this
-- provider account at once").
--
-- The job row itself is the reservation: a job holds its key while it is
-- LEASED (and, once canceled mid-lease, until that lease's expiry, the
-- quiescence marker cancellation keeps), so every path that ends a lease
-- (success, failure, release, reaping, cancellation) releases the key in the
-- statement that already writes the job, and a heartbeat renews it with the
-- lease. Nothing else to keep in step, nothing to leak.
--
-- 1. `resource_key` on jobs, and on workflow steps (copied to the job when
--    the step is released). Non-blank, at most 512 bytes.
-- 2. job_queue_resource_leased_uidx: the guarantee itself, by schema. A
--    claim whose snapshot missed a concurrent lease of the same key fails
--    here (23505) instead of overlapping; claimJobs retries it.
-- 3. job_queue_resource_quiescing_idx: canceled mid-lease jobs still inside
--    their lease (the handler may still be running), probed by the claim.
-- 4. job_queue_resource_head_idx: the key's pending jobs in claim order, so
--    the claim finds each key's head (oldest first) with one index probe.
-- Jobs without a key are in none of these partial indexes and pay nothing.

ALTER TABLE "runledger"."job_queue" ADD COLUMN "resource_key" TEXT;
ALTER TABLE "runledger"."job_queue" ADD CONSTRAINT "job_queue_resource_key_valid"
    CHECK ("resource_key" IS NULL OR (btrim("resource_key") <> '' AND octet_length("resource_key") <= 512));
ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "resource_key" TEXT;
ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_resource_key_valid"
    CHECK ("resource_key" IS NULL OR (btrim("resource_key") <> '' AND octet_length("resource_key") <= 512));

CREATE UNIQUE INDEX "job_queue_resource_leased_uidx" ON "runledger"."job_queue" ("resource_key")
    WHERE "status" = 'LEASED' AND "resource_key" IS NOT NULL;
CREATE INDEX "job_queue_resource_quiescing_idx" ON "runledger"."job_queue" ("resource_key", "lease_expires_at")
    WHERE "status" = 'CANCELED' AND "resource_key" IS NOT NULL AND "lease_expires_at" IS NOT NULL;
CREATE INDEX "job_queue_resource_head_idx" ON "runledger"."job_queue" ("resource_key", "priority" DESC, "next_run_at", "id")
    WHERE "status" = 'PENDING' AND "resource_key" IS NOT NULL;
