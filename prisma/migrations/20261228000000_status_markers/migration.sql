-- Markers that a completion does not change (issue 34, first step of a HOT lifecycle).
--
-- A lifecycle UPDATE of job_queue can be HOT (no index entry at all) only if it changes no column that any
-- index of the table names, in its key or its predicate. Six indexes named `status` (or a lease column, or
-- finished_at) only to select their rows, so every completion (LEASED -> SUCCEEDED) changed an indexed
-- column. Four stored generated columns take that role, each NULL outside the rows its indexes hold, so no
-- writer can let them drift and a completion to SUCCEEDED of a job without an execution resource leaves all
-- four NULL -> NULL:
--   claimable            true for a PENDING job: the two claim indexes and the resource head index;
--   leased_resource_key  resource_key while LEASED: the one-lease-per-resource unique index;
--   quiescing_until      lease_expires_at of a CANCELED job with a resource key: the quiescence probe;
--   dead_lettered_at     finished_at of a DEAD_LETTERED job: the bulk requeue's dead-letter index;
--   canceled_at          finished_at of a CANCELED job: the canceled jobs by type (migration
--                        20261229000001_finished_reads, which adds no column so the table is rewritten once).
-- The indexes keep their names; their readers (the claim, resource_claimable(), getQueueMetrics, the
-- dashboard's PENDING counts, the bulk requeue of dead letters) state the markers so the planner matches
-- them. bench/README.md ("A
-- lifecycle that writes few index entries") has the figures and the steps still to come (the lease index
-- and the finished indexes), which together make completions HOT.
--
-- Adding stored generated columns rewrites job_queue and rebuilds its indexes under an ACCESS EXCLUSIVE
-- lock (14 s for 1M finished jobs on a loaded 2-core machine; minutes at 10M): workers and enqueues wait.
-- One ALTER adds all four, so the table is rewritten once. Index entries per job are unchanged by this
-- step alone (measured: 5 at enqueue, 4 at claim, 6 at completion; bench/probes/index-entries.ts).
ALTER TABLE "runledger"."job_queue"
    ADD COLUMN "claimable" boolean GENERATED ALWAYS AS (CASE WHEN "status" = 'PENDING' THEN true END) STORED,
    ADD COLUMN "leased_resource_key" text GENERATED ALWAYS AS (CASE WHEN "status" = 'LEASED' THEN "resource_key" END) STORED,
    ADD COLUMN "quiescing_until" timestamptz(6)
        GENERATED ALWAYS AS (CASE WHEN "status" = 'CANCELED' AND "resource_key" IS NOT NULL THEN "lease_expires_at" END) STORED,
    ADD COLUMN "dead_lettered_at" timestamptz(6) GENERATED ALWAYS AS (CASE WHEN "status" = 'DEAD_LETTERED' THEN "finished_at" END) STORED,
    ADD COLUMN "canceled_at" timestamptz(6) GENERATED ALWAYS AS (CASE WHEN "status" = 'CANCELED' THEN "finished_at" END) STORED;

DROP INDEX "runledger"."job_queue_claim_by_type_idx";
CREATE INDEX "job_queue_claim_by_type_idx" ON "runledger"."job_queue" ("job_type", "priority" DESC, "next_run_at", "id")
    INCLUDE ("organization_id", "workflow_step_id")
    WHERE "claimable";
-- The always-true priority range stays: only the untyped claim states it, so a typed claim never picks this
-- index (migrations 20261201000000_job_step_link, 20261206000001_claim_plans).
DROP INDEX "runledger"."job_queue_claim_idx";
CREATE INDEX "job_queue_claim_idx" ON "runledger"."job_queue" ("priority" DESC, "next_run_at", "id")
    WHERE "claimable" AND "priority" >= -2147483648;
DROP INDEX "runledger"."job_queue_resource_head_idx";
CREATE INDEX "job_queue_resource_head_idx" ON "runledger"."job_queue" ("resource_key", "priority" DESC, "next_run_at", "id")
    WHERE "claimable" AND "resource_key" IS NOT NULL;
-- Still at most one LEASED job per key (a concurrent claim's race is refused here, under the same name,
-- which src/queue/claim.ts recognizes), and still keyed leased rows only.
DROP INDEX "runledger"."job_queue_resource_leased_uidx";
CREATE UNIQUE INDEX "job_queue_resource_leased_uidx" ON "runledger"."job_queue" ("leased_resource_key")
    WHERE "leased_resource_key" IS NOT NULL;
DROP INDEX "runledger"."job_queue_resource_quiescing_idx";
CREATE INDEX "job_queue_resource_quiescing_idx" ON "runledger"."job_queue" ("resource_key", "quiescing_until")
    WHERE "quiescing_until" IS NOT NULL;
-- Direct dead letters by organization and type, oldest first (src/replay/bulk-requeue.ts).
DROP INDEX "runledger"."job_queue_dead_letter_idx";
CREATE INDEX "job_queue_dead_letter_idx" ON "runledger"."job_queue" ("organization_id", "job_type", "dead_lettered_at", "id")
    WHERE "dead_lettered_at" IS NOT NULL AND "workflow_step_id" IS NULL;

-- The claim's execution-resource test (migration 20261206000001_claim_plans), each probe stated on its
-- marker so it keeps its index: no LEASED job of the key, `p_id` the key's head, no CANCELED job of the key
-- inside a lease that has not run out.
CREATE OR REPLACE FUNCTION "runledger"."resource_claimable"(p_key text, p_id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE COST 1 AS $$
BEGIN
    RETURN NOT EXISTS (SELECT 1 FROM runledger.job_queue l WHERE l.leased_resource_key = p_key)
       AND p_id = (SELECT h.id FROM runledger.job_queue h
                    WHERE h.resource_key = p_key AND h.claimable AND h.next_run_at <= now()
                    ORDER BY h.priority DESC, h.next_run_at, h.id
                    LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM runledger.job_queue q WHERE q.resource_key = p_key AND q.quiescing_until > now());
END
$$;

-- The index budget (migration 20261223000001_index_budget): the reads each serves, in the catalog.
COMMENT ON COLUMN "runledger"."job_queue"."claimable" IS
  'True for a PENDING job, NULL otherwise (generated from status): the predicate of the claim indexes, which a completion does not change (migration 20261228000000).';
COMMENT ON COLUMN "runledger"."job_queue"."leased_resource_key" IS
  'resource_key while the job is LEASED, NULL otherwise (generated): the one-lease-per-resource unique index (migration 20261228000000).';
COMMENT ON COLUMN "runledger"."job_queue"."quiescing_until" IS
  'lease_expires_at of a CANCELED job with a resource key, NULL otherwise (generated): its key is held until then (migration 20261228000000).';
COMMENT ON COLUMN "runledger"."job_queue"."dead_lettered_at" IS
  'finished_at of a DEAD_LETTERED job, NULL otherwise (generated): the dead-letter indexes (migrations 20261228000000, 20261229000001).';
COMMENT ON COLUMN "runledger"."job_queue"."canceled_at" IS
  'finished_at of a CANCELED job, NULL otherwise (generated): the canceled jobs by type (migration 20261229000001).';
COMMENT ON INDEX "runledger"."job_queue_dead_letter_idx" IS
  'Operator reads: the bulk requeue of dead letters and its preview count (requeueDeadLetteredJobs, countDeadLetteredJobs, the dashboard''s dead-letters page), one organization and type, oldest first. Direct DEAD_LETTERED rows only.';
COMMENT ON INDEX "runledger"."job_queue_resource_leased_uidx" IS
  'At most one LEASED job per execution resource key (a concurrent claim''s race is refused here), and resource_claimable()''s key-held probe. Keyed LEASED rows only.';
COMMENT ON INDEX "runledger"."job_queue_resource_quiescing_idx" IS
  'resource_claimable()''s probe for a canceled job of the key whose lease has not yet run out (its handler may still run). Keyed CANCELED rows with a lease only.';
COMMENT ON INDEX "runledger"."job_queue_claim_by_type_idx" IS
  'Hot: the typed claim (claimJobs with jobTypes: what createWorker sends), one ordered scan per type. Covering (organization_id, workflow_step_id included): getQueueMetrics'' live PENDING counts and the dashboard overview''s PENDING counts and oldest due job, index-only. Claimable (PENDING) rows only.';
COMMENT ON INDEX "runledger"."job_queue_claim_idx" IS
  'Hot: the untyped claim (claimJobs without jobTypes), one ordered scan; its predicate is stated only by that claim (migration 20261206000001). Also getQueueMetrics'' oldest runnable job (one probe per priority). Claimable (PENDING) rows only.';
COMMENT ON INDEX "runledger"."job_queue_resource_head_idx" IS
  'Hot for jobs with an execution resource: resource_claimable()''s head-of-key probe in the claim. Keyed claimable (PENDING) rows only (no cost for jobs without a key).';
