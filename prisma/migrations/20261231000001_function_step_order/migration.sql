-- A durable function's steps in call order (issue 37): workflow_step_states gains `call_index` (the view
-- lists its columns, so a column added to workflow_steps reaches listWorkflowSteps only through here).
-- listWorkflowSteps pages by step id, which is the call order except where a failed call ran again in a
-- later attempt beside a recorded sibling; the CLI and the dashboard order a function's steps by this.
--
-- Cost: catalog only. CREATE OR REPLACE VIEW may only add columns at the end, so every column above
-- is as 20261223000000_step_running_derived defined it.
CREATE OR REPLACE VIEW "runledger"."workflow_step_states" AS
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
       jq.stage AS job_stage, jq.progress AS job_progress,
       st.call_index
  FROM "runledger"."workflow_steps" st
  LEFT JOIN "runledger"."job_queue" jq ON jq.id = st.job_id;
