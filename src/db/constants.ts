/**
 * Identifiers that appear in SQL text. Runledger's SQL is written with these
 * names literally inside tagged templates (no `Unsafe` query variants anywhere);
 * this module is the single statement of what they are.
 */

/** The PostgreSQL schema holding runledger's tables and its migration history. */
export const RUNLEDGER_SCHEMA = 'runledger';

/** NOTIFY channel: a workflow run entered a terminal status. Payload `{workflow_run_id, status}`. */
export const WORKFLOW_RUN_TERMINAL_CHANNEL = 'runledger_workflow_run_terminal';

/** NOTIFY channel: jobs became runnable. Payload: the job type. */
export const JOB_AVAILABLE_CHANNEL = 'runledger_job_available';
