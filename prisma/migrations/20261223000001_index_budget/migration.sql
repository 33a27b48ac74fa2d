-- The index budget of the ledger's four write-heavy tables (issue 26): every index names, in the catalog,
-- the read it serves (`\di+ runledger.*` shows it; test/integration/index-budget.test.ts fails on an index
-- of these tables without one). An index costs every INSERT and every non-HOT UPDATE of its table one
-- entry (a partial index: only rows inside its predicate). job_queue's lifecycle updates change `status`,
-- which the claim, lease and finished indexes name in their predicates, so they are never HOT: each job
-- pays its indexes at enqueue, claim and completion. workflow_steps updates that leave job_id alone can be
-- HOT (fillfactor 70, migration 20261220000000); a release sets job_id and is not.
--
-- Reviewed and kept, with what each costs where it is not obvious:
--   job_queue_workflow_step_id_id_key and workflow_steps_id_job_id_key serve no read: they are the targets
--   of the two composite foreign keys that make a job and its step point at each other (migration
--   20261201000000_job_step_link). The first costs every job one entry per write (direct jobs too, as
--   (NULL, id)). Dropping it would let a step name a direct job (caught only by verifyIntegrity's
--   step.job_link_mismatch); kept, so that link stays impossible to corrupt.
--   job_events_pkey serves no hot read (events are read by job, in seq order): it keeps the public
--   event id unique, and costs one entry per stored event, which after the lean ledger are the rare
--   transitions only.
-- No index on these tables serves nothing at all, so none is dropped here.

COMMENT ON INDEX "runledger"."job_queue_pkey" IS
  'Every read and fenced write of one job by id (lifecycle statements lock by primary key through an InitPlan), getJob, the trail view''s job branch.';
COMMENT ON INDEX "runledger"."job_queue_claim_by_type_idx" IS
  'Hot: the typed claim (claimJobs with jobTypes: what createWorker sends), one ordered scan per type. PENDING rows only.';
COMMENT ON INDEX "runledger"."job_queue_claim_idx" IS
  'Hot: the untyped claim (claimJobs without jobTypes), one ordered scan; its predicate is stated only by that claim (migration 20261206000001). Also getQueueMetrics'' live counts and oldest runnable job. PENDING rows only.';
COMMENT ON INDEX "runledger"."job_queue_lease_expiry_idx" IS
  'Hot: the reaper (reapExpiredLeases, expired leases oldest first); leased counts and oldest lease in getQueueMetrics. LEASED rows only.';
COMMENT ON INDEX "runledger"."job_queue_idempotency_key_uidx" IS
  'Enqueue idempotency: the conflict probe of enqueueJob/enqueueJobs with an idempotency key (one job per type, organization and key). Keyed rows only.';
COMMENT ON INDEX "runledger"."job_queue_org_created_idx" IS
  'Operator reads: listJobs, the dashboard''s job lists and search, the CLI''s jobs list, newest first within one organization (or all).';
COMMENT ON INDEX "runledger"."job_queue_finished_direct_idx" IS
  'Retention: purgeFinished walks finished direct jobs oldest first, (finished_at, id) keyset batches. Finished direct jobs only.';
COMMENT ON INDEX "runledger"."job_queue_finished_status_idx" IS
  'Metrics: getQueueMetrics (finished in the last hour, dead-lettered in 24 h, duration percentiles) and the dashboard''s throughput chart, whatever the history. Finished rows only.';
COMMENT ON INDEX "runledger"."job_queue_resource_head_idx" IS
  'Hot for jobs with an execution resource: resource_claimable()''s head-of-key probe in the claim. Keyed PENDING rows only (no cost for jobs without a key).';
COMMENT ON INDEX "runledger"."job_queue_resource_leased_uidx" IS
  'At most one LEASED job per execution resource key (a concurrent claim''s race is refused here), and resource_claimable()''s key-held probe. Keyed LEASED rows only.';
COMMENT ON INDEX "runledger"."job_queue_resource_quiescing_idx" IS
  'resource_claimable()''s probe for a canceled job of the key whose lease has not yet run out (its handler may still run). Keyed CANCELED rows with a lease only.';
COMMENT ON INDEX "runledger"."job_queue_workflow_step_id_id_key" IS
  'No read: target of workflow_steps_job_link_fkey (a step''s job must name that step). Costs one entry per job write; kept for the schema-level link guarantee (migration 20261223000001).';

COMMENT ON INDEX "runledger"."job_events_pkey" IS
  'Unique public event ids; no hot read. One entry per stored event (the rare transitions only since the lean ledger).';
COMMENT ON INDEX "runledger"."job_events_job_idx" IS
  'listJobEvents and the job_trail view (a job''s stored events in seq order); the statement-level trigger that deletes a job''s events with it.';

COMMENT ON INDEX "runledger"."job_attempts_pkey" IS
  'listJobAttempts and the job_attempt_history / job_trail views (a job''s ended attempts in seq order); deleting a job''s attempts with it.';
COMMENT ON INDEX "runledger"."job_attempts_continued_idx" IS
  'Metrics: continuations in getQueueMetrics, by finish time. CONTINUED attempts only.';
COMMENT ON INDEX "runledger"."job_attempts_failed_retry_idx" IS
  'Metrics: retried failures in getQueueMetrics and the dashboard''s throughput chart, by finish time. FAILED_RETRY attempts only.';

COMMENT ON INDEX "runledger"."workflow_steps_pkey" IS
  'Every read and write of one step by id: the claim''s step and prerequisites lookup, completion, release, cancellation.';
COMMENT ON INDEX "runledger"."workflow_steps_job_id_key" IS
  'One step per job, and the step of a job: terminal transitions, retries and the queue''s step hooks find steps by job_id; the step_job foreign key.';
COMMENT ON INDEX "runledger"."workflow_steps_run_key_key" IS
  'Unique step keys in a run; a step by (run, key): external completion, appends.';
COMMENT ON INDEX "runledger"."workflow_steps_run_id_id_key" IS
  'A run''s steps in id order: listWorkflowSteps'' keyset pages, run-wide status recompute, cancellation and integrity checks; target of the edges'' (run, step) foreign keys.';
COMMENT ON INDEX "runledger"."workflow_steps_id_job_id_key" IS
  'No read: target of job_queue''s (workflow_step_id, id) foreign key (a job''s step must name that job). One entry per step insert and release.';
