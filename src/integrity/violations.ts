/**
 * What the integrity checker reports: one violation per broken invariant and
 * object, with a stable `kind`, the ids involved, and what a recomputation
 * from first principles expected next to what the database holds.
 *
 * The time-order kinds (`*_before_*`) hold because every transition time
 * written after a lock wait is at least the times it depends on (SPEC,
 * "Time follows cause"): a transaction's now() can predate a commit it waited for.
 *
 * The kinds, and the invariant each one checks:
 *   run.status_mismatch          run status vs its steps (run-status.ts's recompute rule);
 *                                a CANCELED run has no live step left
 *   run.result_mismatch          a SUCCEEDED run's result is its result step's output; no result otherwise
 *   run.finished_at              finished_at is set exactly on terminal runs
 *   run.finished_before_step     a terminal run finishes no earlier than its last step
 *   step.dependency_counters     total / pending / unsatisfied vs the step's edges and its prerequisites' statuses
 *   step.released_early          a released or finished step whose prerequisites were not all settled and satisfied
 *   step.not_released            a BLOCKED step (in a live run) whose prerequisites are all settled
 *   step.job_missing             a job step that is ENQUEUED, RUNNING, SUCCEEDED or FAILED has a job
 *   step.job_on_blocked_step     a BLOCKED step has no job
 *   step.job_on_external_step    an EXTERNAL step never has a job
 *   step.job_link_mismatch       the step's job names another step (or none) as its own
 *   step.job_status_mismatch     terminal step -> terminal job, SUCCEEDED <-> SUCCEEDED, live step -> PENDING/LEASED job
 *   step.output_not_succeeded    output only on SUCCEEDED steps
 *   step.finished_at             finished_at is set exactly on terminal steps
 *   step.finished_before_released a step finishes no earlier than it was released
 *   step.job_created_before_release a step's job is created (and first runnable) no earlier than the step's release
 *   edge.crosses_runs            an edge and both of its steps belong to one run
 *   edge.released_before_prerequisite_finished
 *                                a dependent is released (or canceled as unsatisfied) no earlier than
 *                                its prerequisite step, and that step's job, finished
 *   job.step_link_mismatch       a job naming a workflow step is that step's job
 *   job.lease_columns            lease owner / expiry / heartbeat / attempt agree with the status
 *   job.lease_row_missing        a LEASED job has its live lease row (job_leases: its expiry, id and resource key)
 *   job.output_not_succeeded     output only on SUCCEEDED jobs
 *   job.finished_at              finished_at is set exactly on terminal jobs
 *   job.finished_before_started  a job finishes no earlier than it was created and started
 *   job.run_number_mismatch      a job's run number is 1 + its REQUEUED events
 *   job.resource_mismatch        a workflow job's execution resource key is its step's
 *   job.backoff_mismatch         a workflow job's backoff (per enqueue or step) is its step's
 *   job.attempt_open_count       at most one open job_attempts row per job
 *   job.attempt_lease_mismatch   a LEASED job's open attempt is its lease's (run, attempt, worker); no other job has one
 *   job.attempt_history          attempts finish no earlier than they start, in a run the job reached
 *   replay.lineage               a job_replays row: both jobs direct, same type and organization,
 *                                the source reached that run, the replay job's ENQUEUED event names it
 *   replay.lineage_missing       a job whose ENQUEUED event says it replays a source has its job_replays row
 *   recovery.lineage             a workflow_recoveries row: both runs exist, the source is finished,
 *                                same workflow type and organization
 *   recovery.carried_step        a step a failed-only recovery carried over is SUCCEEDED without a job,
 *                                with the output its source step succeeded with
 *   intent.job_mismatch          a settled enqueue intent names a job of its own type, organization and key
 *   active_key.scope_mismatch    a claim's scope is its run's: 'global' or 'organization:<organization id>'
 *   active_key.duplicate_claim   at most one unreleased claim per (scope, active key)
 *   active_key.released_early    a claim is released only once its run is terminal and its canceled leases ran out
 *   active_key.release_overdue   a claim whose run has been terminal and quiesced for over a minute is released
 *                                (no reaper swept; the next enqueue of the key would still release it)
 *   mutation.step_count          an append's step_count is the number of steps its request added, all in the run
 *   mutation.edges               the edges into an append's steps are exactly its request's edges
 *   lease.job_mismatch           a live lease row's job is LEASED under it (same expiry, resource and concurrency key); a
 *                                canceled one's, until it runs out, CANCELED with that expiry
 *   concurrency.leased_count     a concurrency key's `leased` is the number of its lease rows (admin scope only:
 *                                a key is shared by every organization's jobs)
 *   function.call_index          a durable function's recorded (FUNCTION) step has a call index; no other step has one
 *   function.call_index_duplicate no two FUNCTION steps of a run share a call index
 *   function.outside_function_run a FUNCTION step belongs to a function run (result step `$function`, a JOB step)
 *   function.step_state          a FUNCTION step is terminal, jobless, edgeless, of its run's organization, released,
 *                                finished no earlier than started; a `$sleep` records its wake time
 *   function.step_after_body     no FUNCTION step finished after its run's body (`$function`) did
 *   function.carried_call_index  a FUNCTION step a recovery carried over has its source step's call index
 */

export type IntegrityViolationKind =
  | 'run.status_mismatch'
  | 'run.result_mismatch'
  | 'run.finished_at'
  | 'run.finished_before_step'
  | 'step.dependency_counters'
  | 'step.released_early'
  | 'step.not_released'
  | 'step.job_missing'
  | 'step.job_on_blocked_step'
  | 'step.job_on_external_step'
  | 'step.job_link_mismatch'
  | 'step.job_status_mismatch'
  | 'step.output_not_succeeded'
  | 'step.finished_at'
  | 'step.finished_before_released'
  | 'step.job_created_before_release'
  | 'edge.crosses_runs'
  | 'edge.released_before_prerequisite_finished'
  | 'job.step_link_mismatch'
  | 'job.lease_columns'
  | 'job.lease_row_missing'
  | 'job.output_not_succeeded'
  | 'job.finished_at'
  | 'job.finished_before_started'
  | 'job.run_number_mismatch'
  | 'job.resource_mismatch'
  | 'job.backoff_mismatch'
  | 'job.attempt_open_count'
  | 'job.attempt_lease_mismatch'
  | 'job.attempt_history'
  | 'replay.lineage'
  | 'replay.lineage_missing'
  | 'recovery.lineage'
  | 'recovery.carried_step'
  | 'intent.job_mismatch'
  | 'active_key.scope_mismatch'
  | 'active_key.duplicate_claim'
  | 'active_key.released_early'
  | 'active_key.release_overdue'
  | 'mutation.step_count'
  | 'mutation.edges'
  | 'lease.job_mismatch'
  | 'concurrency.leased_count'
  | 'function.call_index'
  | 'function.call_index_duplicate'
  | 'function.outside_function_run'
  | 'function.step_state'
  | 'function.step_after_body'
  | 'function.carried_call_index';

export interface IntegrityViolation {
  kind: IntegrityViolationKind;
  /** One sentence for people; the fields below are for programs. */
  message: string;
  workflowRunId?: string;
  stepId?: string;
  stepKey?: string;
  jobId?: string;
  /** What a recomputation from the other rows gives. */
  expected: Record<string, unknown>;
  /** What the database holds. */
  found: Record<string, unknown>;
}

/** The row shape every check statement returns (snake_case, JSON objects for expected/found). */
export interface ViolationRow {
  kind: IntegrityViolationKind;
  workflow_run_id: string | null;
  step_id: string | null;
  step_key: string | null;
  job_id: string | null;
  expected: Record<string, unknown>;
  found: Record<string, unknown>;
}

const MESSAGES: Record<IntegrityViolationKind, string> = {
  'run.status_mismatch': 'The run status does not follow from its steps.',
  'run.result_mismatch': "The run result is not its result step's output.",
  'run.finished_at': 'The run finished_at does not match its status.',
  'run.finished_before_step': 'The run finished before one of its steps did.',
  'step.dependency_counters': "The step's dependency counters do not match its edges and its prerequisites' statuses.",
  'step.released_early': 'The step left BLOCKED although a prerequisite is unsettled or unsatisfied.',
  'step.not_released': 'The step is BLOCKED although every prerequisite is settled.',
  'step.job_missing': 'The job step has no job although its status says it has one.',
  'step.job_on_blocked_step': 'A BLOCKED step has a job.',
  'step.job_on_external_step': 'An external step has a job.',
  'step.job_link_mismatch': "The step's job does not name this step as its own.",
  'step.job_status_mismatch': "The step's status disagrees with its job's status.",
  'step.output_not_succeeded': 'The step has an output but did not succeed.',
  'step.finished_at': 'The step finished_at does not match its status.',
  'step.finished_before_released': 'The step finished before it was released.',
  'step.job_created_before_release': "The step's job was created or made runnable before the step was released.",
  'edge.crosses_runs': 'A dependency edge joins steps of different runs.',
  'edge.released_before_prerequisite_finished': 'The dependent step was released (or canceled as unsatisfied) before its prerequisite finished.',
  'job.step_link_mismatch': 'The job names a workflow step that does not name it as its job.',
  'job.lease_columns': "The job's lease columns disagree with its status.",
  'job.lease_row_missing': 'The LEASED job has no lease row for its lease.',
  'job.output_not_succeeded': 'The job has an output but did not succeed.',
  'job.finished_at': 'The job finished_at does not match its status.',
  'job.finished_before_started': 'The job finished before it was created or started.',
  'job.run_number_mismatch': 'The job run number is not 1 + the number of its requeues.',
  'job.resource_mismatch': "The workflow job does not carry its step's execution resource key.",
  'job.backoff_mismatch': "The workflow job does not carry its step's backoff.",
  'job.attempt_open_count': 'The job has more than one open attempt.',
  'job.attempt_lease_mismatch': "The job's open attempt does not match its lease.",
  'job.attempt_history': 'An attempt of the job finished before it started or belongs to a run the job has not reached.',
  'replay.lineage': 'A replay lineage row disagrees with its source or replay job.',
  'replay.lineage_missing': 'A job replays a source but has no lineage row.',
  'recovery.lineage': 'A workflow recovery row disagrees with its source or recovery run.',
  'recovery.carried_step': 'A step carried over by a recovery disagrees with its source step or its own state.',
  'intent.job_mismatch': 'An enqueue intent names a job of another type, organization or idempotency key.',
  'active_key.scope_mismatch': "The active key's scope is not its run's organization (or global).",
  'active_key.duplicate_claim': 'Another run holds the same active key unreleased.',
  'active_key.released_early': 'The active key was released before its run was terminal and quiesced.',
  'active_key.release_overdue': 'The active key is still held although its run has long been terminal and quiesced.',
  'mutation.step_count': "The append's step count does not match the steps its request added.",
  'mutation.edges': "The edges into the append's steps are not its request's edges.",
  'lease.job_mismatch': 'A lease row names a job that does not hold that lease.',
  'concurrency.leased_count': "A concurrency key's count of leases is not the number of lease rows holding it.",
  'function.call_index': "A durable function's recorded step has no call index, or another kind of step has one.",
  'function.call_index_duplicate': "Two of a durable function run's recorded steps share a call index.",
  'function.outside_function_run': 'A durable function step belongs to a run that is not a function run.',
  'function.step_state': "A durable function's recorded step is not terminal, has a job or an edge, or disagrees with its run.",
  'function.step_after_body': "A durable function's step finished after the function's body did.",
  'function.carried_call_index': "A function step carried over by a recovery is not at its source step's call index.",
};

export function toViolation(row: ViolationRow): IntegrityViolation {
  return {
    kind: row.kind,
    message: MESSAGES[row.kind],
    ...(row.workflow_run_id ? { workflowRunId: row.workflow_run_id } : {}),
    ...(row.step_id ? { stepId: row.step_id } : {}),
    ...(row.step_key ? { stepKey: row.step_key } : {}),
    ...(row.job_id ? { jobId: row.job_id } : {}),
    expected: row.expected,
    found: row.found,
  };
}
