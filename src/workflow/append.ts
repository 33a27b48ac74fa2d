/**
 * Appending steps to a running workflow ("add approval steps after the run
 * started"). New steps may depend on existing steps and on each other (on
 * success or on terminal); existing steps never gain prerequisites. Each
 * append is bound to a mutation key within its run: the same request again
 * returns `already_applied`, a different one `workflow.append_conflicting_retry`.
 *
 * Append windows. With `window`, the append is accepted only while that
 * external step is still WAITING_FOR_EXTERNAL. Such a step holds its run open
 * (a run with a waiting step is never terminal), so a caller that plans to
 * append declares a window step at enqueue, appends while it is open, and
 * closes it with `completeExternalWorkflowStep` when nothing more will come;
 * new steps may depend on the window step to run after it closes. Without a
 * window, any run that is not terminal accepts appends.
 *
 * Order of checks and locks (protocol: locking.ts). Validation -> READ
 * COMMITTED (`workflow.append_unsupported_isolation`) -> run visible in the
 * scope (`workflow.run_not_found`) -> the run's append lock (rung 0) ->
 * release lock shared by try-lock (`workflow.release_conflict` while a
 * cancellation holds it) -> all of its step rows (2a) -> run row (4):
 * mutation key (`already_applied` / `workflow.append_conflicting_retry`),
 * terminal run (`workflow.append_terminal_run`), window
 * (`workflow.append_window_*`), the request against the run's steps. Only
 * then the writes, so a refused append writes nothing.
 *
 * New steps' initial state, computed here from the locked statuses (no
 * existing step can change while we hold its row): an edge from a
 * non-terminal prerequisite is pending; from a terminal one it is settled at
 * once, unsatisfied when ON_SUCCESS and the prerequisite did not succeed. A
 * new step with nothing pending is released at once (a job step gets its
 * job, ENQUEUED; an external step WAITING_FOR_EXTERNAL) or, with something
 * unsatisfied, CANCELED with `workflow.dependency_unsatisfied`; such a
 * cancellation settles its new dependents' edges in turn (the new steps are
 * walked in topological order). Existing steps cannot depend on new ones, so
 * nothing else of the run changes, except its status (RUNNING once it has a
 * released job again).
 *
 * Statements: a constant number whatever the number of steps and edges (one
 * per write, each an `unnest`), about ten in all.
 */
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { scopeParams } from '../db/scope.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors/runledger-error.js';
import { insertJobsTx, type InsertJobRow } from '../queue/insert-jobs.js';
import { asTemplate } from '../db/sql-template.js';
import { writeConcurrencyLimitsStatement } from '../queue/statements/concurrency-limits.js';
import { writeRateLimitsStatement } from '../queue/statements/rate-limits.js';
import { inheritedJobTypes, withCatalogDefaultsForSteps, type CatalogJson } from './catalog-defaults.js';
import { jsonParam } from '../model/job-rows.js';
import { validateAppend, type AppendWorkflowStepsInput, type ValidatedAppend } from './append-request.js';
import { MAX_WORKFLOW_STEPS, type ValidatedStep } from './run-definition.js';
import { lockRunAppend, releaseConflict, tryLockRunReleaseShared } from '../coordination/locking.js';
import { DEPENDENCY_UNSATISFIED } from '../coordination/dependency-release.js';
import { recomputeWorkflowRunStatuses } from '../coordination/run-status.js';
import {
  isTerminalRunStatus,
  isTerminalStepStatus,
  type WorkflowRunStatus,
  type WorkflowStepExecutionKind,
  type WorkflowStepStatus,
} from '../model/workflow-rows.js';
import { inScope } from '../db/fragments.js';

const DEPENDENCY_UNSATISFIED_MESSAGE = 'Step dependency requirements were not satisfied.';

export interface AppendedStep {
  stepKey: string;
  stepId: string;
  status: WorkflowStepStatus;
  jobId: string | null;
}

export interface AppendWorkflowStepsResult {
  /** `appended` by this call; `already_applied` by an earlier call with the same mutation key and request. */
  outcome: 'appended' | 'already_applied';
  workflowRunId: string;
  /** The run's status after this call. */
  runStatus: WorkflowRunStatus;
  /** The request's steps, in request order, as they are now. */
  steps: AppendedStep[];
}

interface LockedStep {
  id: string;
  step_key: string;
  execution_kind: WorkflowStepExecutionKind;
  status: WorkflowStepStatus;
}

/**
 * @example
 * await appendWorkflowSteps(prisma, {
 *   workflowRunId, scope: organizationScope(orgId), mutationKey: 'add-legal-review',
 *   window: 'intake',
 *   steps: [{ key: 'legal', kind: 'external' }, { key: 'notify', kind: 'job', jobType: 'mail.send', payload: { to: 'legal' } }],
 *   edges: [{ prerequisite: 'score', dependent: 'legal' }, { prerequisite: 'legal', dependent: 'notify' }],
 * });
 */
export async function appendWorkflowSteps(db: Db, input: AppendWorkflowStepsInput): Promise<AppendWorkflowStepsResult> {
  const append = validateAppend(input);
  const scope = scopeParams(append.scope);
  const runId = append.workflowRunId;

  return withTransaction(db, 'append workflow steps', async (context) => {
    await ensureReadCommitted(context, 'workflow.append_unsupported_isolation', 'Appending workflow steps');
    const { tx } = context;
    // The catalog defaults of the appended job steps ride on this first read (no statement of their own).
    const visible = await tx.$queryRaw<{ id: string; catalog: CatalogJson }[]>`
      SELECT id,
             (SELECT COALESCE(jsonb_object_agg(d.job_type, jsonb_build_array(d.default_priority, d.default_max_attempts,
                                                                             d.default_timeout_seconds)), '{}'::jsonb)
                FROM runledger.job_definitions d WHERE d.job_type = ANY(${inheritedJobTypes(append.steps)}::text[])) AS catalog
        FROM runledger.workflow_runs
       WHERE id = ${runId}::uuid AND ${inScope(scope, 'organization_id')}`;
    if (visible.length === 0) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId: runId } });

    await lockRunAppend(tx, runId);
    if (!(await tryLockRunReleaseShared(tx, runId))) throw releaseConflict(runId, 'append: cancellation holds the release lock');
    const existing = await tx.$queryRaw<LockedStep[]>`
      SELECT id, step_key, execution_kind, status FROM runledger.workflow_steps
       WHERE workflow_run_id = ${runId}::uuid
       ORDER BY id
         FOR UPDATE`;

    // `at`: the append's time, read once the run row (the last lock) is held, as text so the microseconds
    // survive. New steps released or canceled at once, and their jobs, take it rather than now(): an existing
    // prerequisite may have finished in a transaction that committed while we waited for its row (time follows
    // cause). The outer projection runs after the CTE has locked the row.
    const [run] = await tx.$queryRaw<{ status: WorkflowRunStatus; organization_id: string | null; applied: boolean | null; at: string }[]>`
      WITH locked AS MATERIALIZED (
        SELECT wr.id, wr.status, wr.organization_id::text AS organization_id
          FROM runledger.workflow_runs wr
         WHERE wr.id = ${runId}::uuid
           FOR UPDATE
      )
      SELECT l.status, l.organization_id, m.request = ${jsonParam(append.canonical)}::jsonb AS applied, clock_timestamp()::text AS at
        FROM locked l
        LEFT JOIN runledger.workflow_mutations m ON m.workflow_run_id = l.id AND m.mutation_key = ${append.mutationKey}`;
    if (!run) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId: runId } });

    if (run.applied === false) {
      throw new ConflictError('workflow.append_conflicting_retry', 'This mutation key was already used for a different append to this run.', {
        details: { workflowRunId: runId },
        sensitiveDetails: { mutationKey: append.mutationKey },
      });
    }
    const byKey = new Map(existing.map((step) => [step.step_key, step]));
    if (run.applied === true) {
      return { outcome: 'already_applied', workflowRunId: runId, runStatus: run.status, steps: await readSteps(tx, runId, append) };
    }
    if (isTerminalRunStatus(run.status)) {
      throw new ConflictError('workflow.append_terminal_run', `The workflow run already finished (${run.status}); steps can no longer be appended.`, {
        details: { workflowRunId: runId, status: run.status },
      });
    }
    checkWindow(append, byKey);
    checkAgainstRun(append, byKey);

    const planned = planSteps(append, byKey);
    await writeAppend(tx, runId, run.organization_id, append, planned, byKey, visible[0]!.catalog, run.at);
    const statuses = await recomputeWorkflowRunStatuses(tx, [runId]);
    return {
      outcome: 'appended',
      workflowRunId: runId,
      runStatus: statuses.get(runId) ?? run.status,
      steps: inRequestOrder(
        append,
        planned.map((p) => ({ stepKey: p.step.key, stepId: p.id, status: p.status, jobId: p.jobId })),
      ),
    };
  });
}

function checkWindow(append: ValidatedAppend, byKey: ReadonlyMap<string, LockedStep>): void {
  if (append.window === null) return;
  const window = byKey.get(append.window);
  if (!window) {
    throw new ValidationError('workflow.append_window_missing', 'window', `The run has no step "${append.window}" to serve as an append window.`, {
      details: { stepKey: append.window },
    });
  }
  if (window.execution_kind !== 'EXTERNAL') {
    throw new ValidationError('workflow.append_window_not_external', 'window', `Step "${append.window}" is a job step; an append window is an external step.`, {
      details: { stepKey: append.window },
    });
  }
  if (window.status !== 'WAITING_FOR_EXTERNAL') {
    throw new ConflictError('workflow.append_window_closed', `The append window "${append.window}" is closed (${window.status}).`, {
      details: { stepKey: append.window, status: window.status },
    });
  }
}

/** The request against the run's steps: fresh keys, known prerequisites, new dependents, the step limit. */
function checkAgainstRun(append: ValidatedAppend, byKey: ReadonlyMap<string, LockedStep>): void {
  const newKeys = new Set(append.steps.map((step) => step.key));
  if (byKey.size + append.steps.length > MAX_WORKFLOW_STEPS) {
    throw new ValidationError(
      'workflow.step_limit_exceeded',
      'steps',
      `A workflow run has at most ${MAX_WORKFLOW_STEPS} steps; it has ${byKey.size} and the append adds ${append.steps.length}.`,
      {
        details: { existing: byKey.size, appended: append.steps.length, max: MAX_WORKFLOW_STEPS },
      },
    );
  }
  for (const step of append.steps) {
    if (byKey.has(step.key)) {
      const index = append.inputOrder.indexOf(step.key);
      throw new ValidationError('workflow.duplicate_step_key', `steps.${index}.key`, `The run already has a step "${step.key}".`, {
        details: { stepKey: step.key },
      });
    }
  }
  append.edges.forEach((edge, index) => {
    if (!newKeys.has(edge.dependent)) {
      if (byKey.has(edge.dependent)) {
        throw new ValidationError(
          'workflow.append_existing_dependent',
          `edges.${index}.dependent`,
          `Existing step "${edge.dependent}" cannot depend on an appended step.`,
          {
            details: { stepKey: edge.dependent },
          },
        );
      }
      throw new ValidationError(
        'workflow.append_unknown_dependent',
        `edges.${index}.dependent`,
        `Edge ${index} names "${edge.dependent}", which is not one of the appended steps.`,
        {
          details: { stepKey: edge.dependent },
        },
      );
    }
    if (!newKeys.has(edge.prerequisite) && !byKey.has(edge.prerequisite)) {
      throw new ValidationError(
        'workflow.unknown_prerequisite',
        `edges.${index}.prerequisite`,
        `Step "${edge.dependent}" depends on unknown step "${edge.prerequisite}".`,
        {
          details: { stepKey: edge.dependent, prerequisite: edge.prerequisite },
        },
      );
    }
  });
}

interface PlannedStep {
  step: ValidatedStep;
  id: string;
  status: WorkflowStepStatus;
  jobId: string | null;
  pending: number;
  unsatisfied: number;
}

/** Initial counters and statuses of the new steps, in topological order (module comment). */
function planSteps(append: ValidatedAppend, byKey: ReadonlyMap<string, LockedStep>): PlannedStep[] {
  const planned = new Map<string, PlannedStep>();
  for (const step of append.steps) {
    let pending = 0;
    let unsatisfied = 0;
    for (const dependency of step.dependsOn) {
      const prerequisite = planned.get(dependency.step)?.status ?? byKey.get(dependency.step)!.status;
      if (!isTerminalStepStatus(prerequisite)) pending += 1;
      else if (dependency.mode === 'ON_SUCCESS' && prerequisite !== 'SUCCEEDED') unsatisfied += 1;
    }
    const status: WorkflowStepStatus = pending > 0 ? 'BLOCKED' : unsatisfied > 0 ? 'CANCELED' : step.kind === 'job' ? 'ENQUEUED' : 'WAITING_FOR_EXTERNAL';
    planned.set(step.key, { step, id: newId(), status, jobId: status === 'ENQUEUED' ? newId() : null, pending, unsatisfied });
  }
  return [...planned.values()];
}

/** Jobs, steps, then edges and the mutation row: one statement each. */
async function writeAppend(
  tx: Tx,
  runId: string,
  organizationId: string | null,
  append: ValidatedAppend,
  planned: readonly PlannedStep[],
  byKey: ReadonlyMap<string, LockedStep>,
  catalog: CatalogJson,
  at: string,
): Promise<void> {
  planned = withCatalogDefaultsForSteps(planned, catalog);
  const jobs: InsertJobRow[] = planned.flatMap((p) =>
    p.status === 'ENQUEUED' && p.step.kind === 'job'
      ? [
          {
            id: p.jobId!,
            jobType: p.step.jobType,
            organizationId,
            payload: p.step.payload,
            priority: p.step.priority,
            maxAttempts: p.step.maxAttempts,
            timeoutSeconds: p.step.timeoutSeconds,
            nextRunAt: null,
            idempotencyKey: null,
            enqueueRequest: null,
            eventPayload: { workflowRunId: runId, stepId: p.id, stepKey: p.step.key, mutationKey: append.mutationKey },
            workflowStepId: p.id,
            resourceKey: p.step.resourceKey,
            concurrency: p.step.concurrency,
            rateLimit: p.step.rateLimit,
            fairness: p.step.fairness,
            backoff: p.step.backoff,
            stage: p.step.stage,
          },
        ]
      : [],
  );
  await insertJobsTx(tx, jobs, { at });
  // The limits of steps released later: their keys' rows exist before any of their jobs does.
  const limits = planned.flatMap((p) => (p.step.kind === 'job' && p.step.concurrency !== null && p.status !== 'ENQUEUED' ? [p.step.concurrency] : []));
  if (limits.length > 0) await tx.$queryRaw(...asTemplate(writeConcurrencyLimitsStatement(limits)));
  const rates = planned.flatMap((p) => (p.step.kind === 'job' && p.step.rateLimit !== null && p.status !== 'ENQUEUED' ? [p.step.rateLimit] : []));
  if (rates.length > 0) await tx.$queryRaw(...asTemplate(writeRateLimitsStatement([...new Map(rates.map((r) => [r.key, r])).values()])));

  const col = <T>(pick: (p: PlannedStep) => T): T[] => planned.map(pick);
  const job = <T>(pick: (step: Extract<ValidatedStep, { kind: 'job' }>) => T): (T | null)[] =>
    planned.map((p) => (p.step.kind === 'job' ? pick(p.step) : null));
  // The organization is copied from the run row, whatever type its column has.
  await tx.$executeRaw`
    INSERT INTO runledger.workflow_steps
           (id, workflow_run_id, step_key, execution_kind, job_type, organization_id, payload, priority, max_attempts,
            timeout_seconds, resource_key, concurrency_key, rate_key, fair_key, fair_weight, backoff_base_ms, backoff_max_ms, stage, allow_continuation, status, job_id, released_at, finished_at, dependency_count_total,
            dependency_count_pending, dependency_count_unsatisfied, status_reason, last_error_code, last_error_message)
    SELECT s.id, wr.id, s.step_key, s.kind::runledger.workflow_step_execution_kind, s.job_type, wr.organization_id,
           s.payload, s.priority, s.max_attempts, s.timeout_seconds, s.resource_key, s.concurrency_key, s.rate_key, s.fair_key, s.fair_weight, s.backoff_base_ms, s.backoff_max_ms, s.stage, COALESCE(s.allow_continuation, false),
           s.status::runledger.workflow_step_status, s.job_id,
           CASE WHEN s.status IN ('ENQUEUED', 'WAITING_FOR_EXTERNAL') THEN ${at}::timestamptz END,
           CASE WHEN s.status = 'CANCELED' THEN ${at}::timestamptz END,
           s.total, s.pending, s.unsatisfied,
           CASE WHEN s.status = 'CANCELED' THEN ${DEPENDENCY_UNSATISFIED} END,
           CASE WHEN s.status = 'CANCELED' THEN ${DEPENDENCY_UNSATISFIED} END,
           CASE WHEN s.status = 'CANCELED' THEN ${DEPENDENCY_UNSATISFIED_MESSAGE} END
      FROM runledger.workflow_runs wr,
           unnest(${col((p) => p.id)}::uuid[], ${col((p) => p.step.key)}::text[],
                  ${col((p) => (p.step.kind === 'job' ? 'JOB' : 'EXTERNAL'))}::text[], ${job((s) => s.jobType)}::text[],
                  ${job((s) => JSON.stringify(s.payload))}::jsonb[], ${job((s) => s.priority)}::int[],
                  ${job((s) => s.maxAttempts)}::int[], ${job((s) => s.timeoutSeconds)}::int[], ${job((s) => s.resourceKey)}::text[],
                  ${job((s) => s.backoff?.baseDelayMs ?? null)}::int[], ${job((s) => s.backoff?.maxDelayMs ?? null)}::int[],
                  ${col((p) => p.status)}::text[], ${col((p) => p.jobId)}::uuid[], ${col((p) => p.step.dependsOn.length)}::int[],
                  ${col((p) => p.pending)}::int[], ${col((p) => p.unsatisfied)}::int[], ${job((s) => s.stage)}::text[],
                  ${job((s) => s.allowContinuation)}::boolean[], ${job((s) => s.concurrency?.key ?? null)}::text[],
                  ${job((s) => s.rateLimit?.key ?? null)}::text[], ${job((s) => s.fairness?.key ?? null)}::text[],
                  ${job((s) => s.fairness?.weight ?? null)}::int[])
           AS s(id, step_key, kind, job_type, payload, priority, max_attempts, timeout_seconds, resource_key, backoff_base_ms,
                backoff_max_ms, status, job_id, total,
                pending, unsatisfied, stage, allow_continuation, concurrency_key, rate_key, fair_key, fair_weight)
     WHERE wr.id = ${runId}::uuid`;

  const idOf = new Map<string, string>([
    ...[...byKey.values()].map((step): [string, string] => [step.step_key, step.id]),
    ...planned.map((p): [string, string] => [p.step.key, p.id]),
  ]);
  const edges = planned.flatMap((p) => p.step.dependsOn.map((d) => ({ prerequisite: idOf.get(d.step)!, dependent: p.id, mode: d.mode })));
  await tx.$executeRaw`
    WITH mutation AS (
      INSERT INTO runledger.workflow_mutations (workflow_run_id, mutation_key, request, step_count)
      VALUES (${runId}::uuid, ${append.mutationKey}, ${jsonParam(append.canonical)}::jsonb, ${planned.length}::int)
    )
    INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
    SELECT e.prerequisite, e.dependent, ${runId}::uuid, e.mode::runledger.workflow_dependency_release_mode
      FROM unnest(${edges.map((e) => e.prerequisite)}::uuid[], ${edges.map((e) => e.dependent)}::uuid[], ${edges.map((e) => e.mode)}::text[])
           AS e(prerequisite, dependent, mode)`;
}

/** The request's steps as stored now (an `already_applied` retry), in request order. */
async function readSteps(tx: Tx, runId: string, append: ValidatedAppend): Promise<AppendedStep[]> {
  const rows = await tx.$queryRaw<{ id: string; step_key: string; status: WorkflowStepStatus; job_id: string | null }[]>`
    SELECT id, step_key, status, job_id FROM runledger.workflow_steps
     WHERE workflow_run_id = ${runId}::uuid AND step_key = ANY(${append.steps.map((step) => step.key)}::text[])`;
  return inRequestOrder(
    append,
    rows.map((row) => ({ stepKey: row.step_key, stepId: row.id, status: row.status, jobId: row.job_id })),
  );
}

function inRequestOrder(append: ValidatedAppend, steps: readonly AppendedStep[]): AppendedStep[] {
  const byKey = new Map(steps.map((step) => [step.stepKey, step]));
  return append.inputOrder.flatMap((key) => {
    const step = byKey.get(key);
    return step ? [step] : [];
  });
}
