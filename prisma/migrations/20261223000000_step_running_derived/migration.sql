-- A job step's RUNNING is read from its job, not written at claim (issue 26, the lean ledger).
--
-- Until now every claim of a workflow job also updated its step row (status RUNNING, started_at,
-- updated_at): one row write and one row lock per step per claim, for a fact the job row already
-- holds (the job is LEASED, its open attempt's start is attempt_started_at). From this migration on:
--
--   stored workflow_steps.status stays ENQUEUED from release until the step ends (a retry, a
--   continuation, a release or a reaped lease rewrites the row as before, still ENQUEUED);
--   started_at is stored by the statement that ends the step's first counted attempt (retry,
--   continuation, success, failure, cancellation), from the attempt's own start;
--   a reader sees RUNNING while the step's job is LEASED, and started_at = the open attempt's start
--   until it is stored.
--
-- runledger.workflow_step_states applies that rule: listWorkflowSteps (and so the dashboard and the
-- CLI) reads it, and so can an operator's SQL. Rows written as RUNNING by earlier versions (steps in
-- flight during the upgrade, or a worker of the previous version still claiming) stay valid: every
-- writer accepts ENQUEUED or RUNNING where it used to require RUNNING, and the view shows them as
-- stored. Nothing to convert.
--
-- The view lists its columns: a column added to workflow_steps later must be added here too
-- (CREATE OR REPLACE VIEW) for listWorkflowSteps to return it.
CREATE VIEW "runledger"."workflow_step_states" AS
SELECT st.id, st.workflow_run_id, st.step_key, st.execution_kind, st.job_type, st.organization_id, st.payload,
       st.priority, st.max_attempts, st.timeout_seconds, st.resource_key, st.backoff_base_ms, st.backoff_max_ms,
       st.stage, st.allow_continuation,
       CASE WHEN st.status = 'ENQUEUED' AND jq.status = 'LEASED' THEN 'RUNNING'::"runledger"."workflow_step_status"
            ELSE st.status END AS status,
       st.job_id, st.released_at,
       COALESCE(st.started_at,
                CASE WHEN st.status IN ('ENQUEUED', 'RUNNING') AND jq.status = 'LEASED' THEN jq.attempt_started_at END) AS started_at,
       st.finished_at, st.dependency_count_total, st.dependency_count_pending, st.dependency_count_unsatisfied,
       st.status_reason, st.last_error_code, st.last_error_message, st.output, st.created_at,
       GREATEST(st.updated_at,
                CASE WHEN st.status IN ('ENQUEUED', 'RUNNING') AND jq.status = 'LEASED' THEN jq.attempt_started_at END) AS updated_at,
       -- The step's job's live stage and progress (the dashboard's and CLI's step tables show them).
       jq.stage AS job_stage, jq.progress AS job_progress
  FROM "runledger"."workflow_steps" st
  LEFT JOIN "runledger"."job_queue" jq ON jq.id = st.job_id;
