-- Live counts without the heap (issue 23: 10M finished jobs and a 1M backlog).
--
-- getQueueMetrics' live counts and the dashboard overview count PENDING jobs
-- by type, kind (workflow step or direct), organization and whether due. With
-- a 1M backlog PostgreSQL 15 chose a sequential scan of the whole table for
-- that (1.8 s at 11M rows): an index scan would fetch every pending row's heap
-- page. The typed claim's index already holds every PENDING job ordered by
-- type and carries next_run_at; with organization_id and workflow_step_id
-- included it covers those counts, which become index-only scans (on pages
-- vacuum has marked all-visible; autovacuum's insert threshold vacuums a
-- backlog that sits).
--
-- Widening the claim's own index instead of adding one: a new partial index
-- over PENDING rows would cost every enqueue (and every retry) one more index
-- entry; the included columns cost the existing entry a few bytes, and the
-- claim reads the same entries in the same order (its plan is pinned by
-- test/integration/queue-claim-plan.test.ts). Rebuilt under the same name, in
-- the migration's transaction: on a very large backlog a deployer may build
-- the new definition CONCURRENTLY under another name beforehand and swap.
DROP INDEX "runledger"."job_queue_claim_by_type_idx";
CREATE INDEX "job_queue_claim_by_type_idx" ON "runledger"."job_queue" ("job_type", "priority" DESC, "next_run_at", "id")
    INCLUDE ("organization_id", "workflow_step_id")
    WHERE "status" = 'PENDING';
-- The index budget (migration 20261223000001_index_budget): the reads it serves, in the catalog.
COMMENT ON INDEX "runledger"."job_queue_claim_by_type_idx" IS
  'Hot: the typed claim (claimJobs with jobTypes: what createWorker sends), one ordered scan per type. Covering (organization_id, workflow_step_id included): getQueueMetrics'' live PENDING counts and the dashboard overview''s PENDING counts and oldest due job, index-only. PENDING rows only.';
COMMENT ON INDEX "runledger"."job_queue_claim_idx" IS
  'Hot: the untyped claim (claimJobs without jobTypes), one ordered scan; its predicate is stated only by that claim (migration 20261206000001). Also getQueueMetrics'' oldest runnable job (one probe per priority). PENDING rows only.';
