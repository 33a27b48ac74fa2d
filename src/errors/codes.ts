/**
 * Every code runledger uses, in one place. `ErrorCode` is the `code` of a
 * thrown RunledgerError: the constructors take nothing else, so a misspelled
 * code fails to compile, and `isRunledgerError(e, 'job.lease_owner_mismatch')`
 * autocompletes. `JobOutcomeCode` is what runledger itself records on a job or
 * step (its `lastErrorCode` or `statusReason`) without throwing it; a
 * handler's RetryableError/TerminalError may record codes of its own.
 * test/unit/error-codes.test.ts checks both lists against the source.
 */
export const ERROR_CODES = [
  // The operator CLI (usage errors: exit code 2).
  'cli.usage',
  'cli.missing_command',
  'cli.missing_argument',
  'cli.missing_mandatory_option_value',
  'cli.option_missing_argument',
  'cli.unknown_option',
  'cli.unknown_command',
  'cli.excess_arguments',
  'cli.invalid_argument',
  'cli.conflicting_option',
  'cli.conflicting_options',
  'cli.missing_database_url',
  // `worker --handlers x.ts` where Node cannot load TypeScript and tsx is not installed.
  'cli.typescript_handlers',
  'cli.requeue_status',
  'cli.scope_not_supported',
  'cli.blank_organization',
  // A scope built from input (organizationScope): a blank organization is refused.
  'scope.invalid_input',
  // The Prisma client handed in.
  'client.invalid',
  'client.invalid_options',
  // A poolDb client (or the pg Pool under a Prisma adapter) whose pool was ended: it can never run again
  // (category validation, field db).
  'client.pool_ended',
  // The web dashboard (src/dashboard/): HTTP status by category, except forbidden, read_only, csrf_rejected (403),
  // method_not_allowed (405) and payload_too_large (413).
  'dashboard.invalid_options',
  'dashboard.invalid_input',
  'dashboard.forbidden',
  'dashboard.read_only',
  'dashboard.csrf_rejected',
  'dashboard.payload_too_large',
  'dashboard.not_found',
  'dashboard.method_not_allowed',
  'dashboard.assets_missing',
  'dashboard.invalid_scope',
  'dashboard.internal',
  'dashboard.job_changed',
  'dashboard.cancellation_not_quiesced',
  // The database, normalised (src/errors/database-error.ts).
  'database.error',
  'database.timeout',
  'database.transaction_conflict',
  'database.unavailable',
  // 3D000: the connection string names a database that does not exist (category unavailable: CLI exit code 5).
  'database.not_found',
  // A transaction client used after it committed or rolled back (category validation, field db).
  'database.transaction_closed',
  // 25006: a write on a read-only session (a replica URL, default_transaction_read_only; category unavailable).
  'database.read_only',
  // Jobs.
  'job.invalid_input',
  'job.not_found',
  // A job handle's getResult (src/queue/job-handle.ts).
  'job.handle_requires_root_client',
  'job.result_dead_lettered',
  'job.result_canceled',
  'job.result_type_mismatch',
  'job.result_wait_timeout',
  'job.result_wait_aborted',
  'job.not_cancelable',
  'job.lease_owner_mismatch',
  // continueJob on a workflow job whose step did not opt in (allowContinuation); the job stays LEASED.
  'job.continuation_not_enabled',
  'job.idempotency_conflict',
  'job.internal_state',
  'job.enqueue_idempotency_unsupported_isolation',
  'job.enqueue_window_unsupported_isolation',
  'job.reap_unsupported_isolation',
  'job.compare_and_replay_unsupported_isolation',
  'job.replay_idempotency_conflict',
  'job.replay_missing',
  'job.workflow_requeue_not_supported',
  'job.resource_claim_conflict',
  // setConcurrencyLimit(key, null) for a key no job or operator has named.
  'job.concurrency_key_not_found',
  // setRateLimit(key, null) for a key no job or operator has named.
  'job.rate_key_not_found',
  // The job definitions catalog and enqueue intents.
  'job.definition_not_found',
  'job.definition_not_found_or_disabled',
  'job.intent_unsupported_isolation',
  // Recording an intent under a key that holds an intent of another request (thrown); promoting an intent whose
  // key holds a job of another request (the CONFLICT intent's lastErrorCode).
  'job.intent_idempotency_conflict',
  // The integrity checker.
  'integrity.invalid_input',
  // Retention.
  'retention.invalid_input',
  // Queue metrics.
  'metrics.invalid_input',
  // Cron schedules.
  'schedule.invalid_input',
  'schedule.not_found',
  'schedule.unsupported_isolation',
  // LISTEN/NOTIFY.
  'listen.connection_failed',
  'listen.invalid_channel',
  'listen.invalid_options',
  // Migrations.
  'migrate.checksum_mismatch',
  'migrate.connection_failed',
  // runledger's tables or schema are missing (42P01/3F000/42704/42883 naming them): run migrate().
  'migrate.required',

  'migrate.failed_migration_in_history',
  'migrate.history_in_other_schema',
  'migrate.invalid_options',
  'migrate.migration_failed',
  'migrate.untracked_schema_objects',
  // runledger/testing.
  'testing.invalid_options',
  'testing.run_until_idle_timeout',
  // The worker runtime.
  'worker.invalid_job_definition',
  'worker.invalid_options',
  'worker.stopped',
  'worker.invalid_continuation',
  // start(): a transactional job type's client is on another database (or server) than the worker's db.
  'worker.transaction_database_mismatch',
  // Workflows.
  'workflow.invalid_input',
  'workflow.blank_step_key',
  'workflow.duplicate_step_key',
  'workflow.unknown_prerequisite',
  'workflow.self_dependency',
  'workflow.duplicate_dependency',
  'workflow.cycle',
  'workflow.multiple_result_steps',
  'workflow.unknown_step',
  'workflow.idempotency_conflict',
  'workflow.enqueue_idempotency_unsupported_isolation',
  'workflow.terminal_completion_unsupported_isolation',
  'workflow.external_completion_unsupported_isolation',
  'workflow.cancel_unsupported_isolation',
  'workflow.run_not_found',
  'workflow.run_already_finished',
  'workflow.release_conflict',
  'workflow.internal_state',
  'workflow.external_step_not_found',
  'workflow.external_step_not_external',
  'workflow.external_step_not_waiting',
  'workflow.external_step_job_settings',
  'workflow.external_output_not_allowed',
  'workflow.external_step_conflicting_completion_retry',
  'workflow.external_step_conflicting_output_retry',
  'workflow.handle_requires_root_client',
  'workflow.result_not_declared',
  'workflow.result_missing',
  'workflow.result_unsuccessful_terminal',
  'workflow.result_wait_timeout',
  // getResult's options.signal aborted the wait (category unavailable, like the timeout; the cause is the signal's reason).
  'workflow.result_wait_aborted',
  // Active workflow keys and appended steps.
  'workflow.active_key_unsupported_isolation',
  'workflow.append_unsupported_isolation',
  'workflow.append_conflicting_retry',
  'workflow.append_terminal_run',
  'workflow.append_window_missing',
  'workflow.append_window_not_external',
  'workflow.append_window_closed',
  'workflow.append_existing_dependent',
  'workflow.append_unknown_dependent',
  'workflow.step_limit_exceeded',
  // Workflow recovery (src/recovery/).
  'workflow.recovery_unsupported_isolation',
  'workflow.recovery_source_not_terminal',
  'workflow.recovery_source_not_quiesced',
  'workflow.recovery_snapshot_missing',
  'workflow.recovery_snapshot_unsafe',
  'workflow.recovery_request_conflict',
  'workflow.recovery_active_key_held',
  'workflow.recovery_nothing_to_rerun',
  'workflow.recovery_already_recovered',
  'workflow.recovery_not_a_function',
  // Durable functions (src/workflow/function-*.ts): a bad definition, a bad step call (name, settings, sleep),
  // a re-execution whose calls differ from the record (also recorded as the body's job's lastErrorCode), a
  // step's try past its timeoutMs.
  'workflow.invalid_function',
  'workflow.invalid_function_step',
  'workflow.function_nondeterministic',
  'workflow.function_step_timeout',
  // Signals to durable function runs (src/workflow/function-signal.ts): bad input, a run that is no function,
  // an idempotency key reused for another signal, a host transaction that is not READ COMMITTED.
  'workflow.invalid_signal',
  'workflow.signal_not_function',
  'workflow.signal_idempotency_conflict',
  'workflow.signal_unsupported_isolation',
  // A durable function's child run (ctx.invoke) ended COMPLETED_WITH_ERRORS, or was canceled (or purged).
  'workflow.child_failed',
  'workflow.child_canceled',
] as const;

/** The `code` of every RunledgerError runledger throws. */
export type ErrorCode = (typeof ERROR_CODES)[number];

export const JOB_OUTCOME_CODES = [
  // A job's lastErrorCode, recorded by the worker from what its handler did.
  'job.handler_error',
  'job.retry_requested',
  'job.terminal_error',
  'job.payload_invalid',
  'job.output_invalid',
  'job.timeout',
  // A workflow job returned a continuation although its step did not opt in (allowContinuation).
  'job.workflow_handler_continuation_not_enabled',
  // A workflow step waiting for its job's next slice (a step's statusReason).
  'job.continued',
  // A step read a prerequisite's output with the wrong definition (recorded through a TerminalError).
  'workflow.prerequisite_type_mismatch',
  // Recorded by the reaper: the lease expired and the worker is presumed dead.
  'job.lease_expired',
  // Release and cancellation reasons (a job event's reason, a job's or step's statusReason).
  'job.worker_shutdown',
  'job.buffer_expired',
  'job.released',
  'job.canceled',
  'job.retry_scheduled',
  'workflow.dependency_unsatisfied',
  'workflow.run_canceled',
  // A step a failed-only recovery carried over from its source as SUCCEEDED (its statusReason).
  'workflow.recovery_carried',
  // A durable function's job run outside a workflow run (enqueued directly) or its handler called by hand.
  'workflow.function_outside_run',
] as const;

/** Codes runledger records on jobs and steps (never thrown). */
export type JobOutcomeCode = (typeof JOB_OUTCOME_CODES)[number];
