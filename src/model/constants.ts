/**
 * Identifiers that appear in SQL text. Runledger's SQL is written with these
 * names literally inside tagged templates (no `Unsafe` query variants anywhere);
 * this module is the single statement of what they are.
 */

/** The PostgreSQL schema holding runledger's tables and its migration history. */
export const RUNLEDGER_SCHEMA = 'runledger';

/** NOTIFY channel: a workflow run entered a terminal status. Payload `{workflow_run_id, status}`. */
export const WORKFLOW_RUN_TERMINAL_CHANNEL = 'runledger_workflow_run_terminal';

/**
 * NOTIFY channel: steps of a workflow run became terminal (and with them,
 * dependents released or skipped). Payload: the run id. Sent by the statement
 * that recomputes the run's status after a terminal step (run-status.ts), so
 * it rides on a transaction that already writes the run; a claim's step ->
 * RUNNING sends nothing (a NOTIFY on every claim would serialize claims'
 * commits on the notify queue lock). A durable function's step records send
 * it at most once per 250 ms per attempt, for the same reason.
 */
export const WORKFLOW_STEP_CHANGED_CHANNEL = 'runledger_workflow_step_changed';

/** NOTIFY channel: jobs became runnable. Payload: the job type. */
export const JOB_AVAILABLE_CHANNEL = 'runledger_job_available';

/** The step key of a durable function's body (its run's result step); `$` is refused in user step keys. */
export const FUNCTION_STEP_KEY = '$function';
