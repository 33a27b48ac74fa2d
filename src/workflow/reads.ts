/**
 * Reads of runs, steps and edges, always within an exact scope (see
 * src/db/scope.ts). Every list returns a Page (`{ items, nextCursor }`) and
 * pages by keyset, never by offset: runs by (created_at, id) descending, steps
 * by id, edges by (prerequisite, dependent).
 */
import { empty, sqltag, type Sql } from '@prisma/client/runtime/client';
import { z } from 'zod';
import { withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { nonBlank, UUID_PATTERN, uuid } from '../validation/primitives.js';
import { pageFields, type Page } from '../queue/inputs.js';
import { toWorkflowRunLineage, type LineageColumns, type WorkflowRunLineage } from './run-lineage.js';
import {
  type WaitingForExternalColumn,
  toWorkflowRun,
  toWorkflowStep,
  toWorkflowStepDependency,
  type WorkflowRun,
  type WorkflowRunRow,
  type WorkflowRunStatus,
  type WorkflowStep,
  type WorkflowStepDependency,
  type WorkflowStepDependencyRow,
  type WorkflowStepRow,
} from '../model/workflow-rows.js';
import { inScope, runWaitingForExternal } from '../db/fragments.js';

const INVALID = 'workflow.invalid_input';
const runStatus = z.enum(['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED']);

const filterSchema = z.strictObject({
  scope: scopeSchema,
  // Bounded like the type a run is written with (nonBlank(200)): a longer or blank filter could match nothing.
  workflowType: nonBlank(200).optional(),
  status: z.union([runStatus, z.array(runStatus).min(1)]).optional(),
  waitingForExternal: z.boolean().optional(),
});
const listSchema = filterSchema.extend(pageFields(new RegExp(`^[0-9]{1,19}:${UUID_PATTERN}$`, 'i'), 'listWorkflowRuns'));
const runRefSchema = z.strictObject({ scope: scopeSchema, workflowRunId: uuid });
const listStepsSchema = runRefSchema.extend(pageFields(new RegExp(`^${UUID_PATTERN}$`, 'i'), 'listWorkflowSteps'));
const listDependenciesSchema = runRefSchema.extend(pageFields(new RegExp(`^${UUID_PATTERN}:${UUID_PATTERN}$`, 'i'), 'listWorkflowStepDependencies'));

export interface WorkflowRunFilter {
  scope: Scope;
  workflowType?: string;
  status?: WorkflowRunStatus | WorkflowRunStatus[];
  /**
   * true: only runs waiting on a person (some step WAITING_FOR_EXTERNAL,
   * whatever the run's status: see WorkflowRun.waitingForExternal); false:
   * only runs with no such step. Left out: no filter.
   */
  waitingForExternal?: boolean;
}
export interface ListWorkflowRunsInput extends WorkflowRunFilter {
  /** At most 500; default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}
export interface WorkflowRunRef {
  scope: Scope;
  workflowRunId: string;
}
export interface ListWorkflowStepsInput extends WorkflowRunRef {
  limit?: number;
  cursor?: string;
}

function runNotFound(workflowRunId: string): NotFoundError {
  return new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId } });
}

/** A run read by id, with its recovery lineage (src/workflow/run-lineage.ts). */
export type WorkflowRunWithLineage = WorkflowRun & WorkflowRunLineage;

/**
 * The run with its lineage, or null when it does not exist in `scope`. One
 * statement: the lineage rows are reached through workflow_recoveries'
 * unique recovery-run index and its (source, created_at) index.
 */
export async function findWorkflowRun(db: Db, input: WorkflowRunRef): Promise<WorkflowRunWithLineage | null> {
  const ref = parseInput(runRefSchema, input, INVALID);
  const s = scopeParams(ref.scope);
  const rows = await withTransaction(
    db,
    'read workflow run',
    async ({ tx }) =>
      tx.$queryRaw<(WorkflowRunRow & WaitingForExternalColumn & LineageColumns)[]>`
      SELECT wr.*, ${runWaitingForExternal('wr')} AS waiting_for_external,
             (SELECT jsonb_build_object('source_run_id', r.source_run_id, 'recovery_run_id', r.recovery_run_id, 'request_key', r.request_key,
                                        'reason', r.reason, 'mode', r.mode, 'created_at', r.created_at, 'recovery_status', wr.status)
                FROM runledger.workflow_recoveries r WHERE r.recovery_run_id = wr.id) AS recovered_from,
             (SELECT count(*)::int FROM runledger.workflow_recoveries r WHERE r.source_run_id = wr.id) AS recovery_count,
             (SELECT jsonb_build_object('source_run_id', r.source_run_id, 'recovery_run_id', r.recovery_run_id, 'request_key', r.request_key,
                                        'reason', r.reason, 'mode', r.mode, 'created_at', r.created_at, 'recovery_status', rr.status)
                FROM runledger.workflow_recoveries r JOIN runledger.workflow_runs rr ON rr.id = r.recovery_run_id
               WHERE r.source_run_id = wr.id
               ORDER BY r.created_at DESC, r.recovery_run_id DESC LIMIT 1) AS latest_recovery
        FROM runledger.workflow_runs wr
       WHERE wr.id = ${ref.workflowRunId}::uuid AND ${inScope(s, 'wr.organization_id')}`,
  );
  const row = rows[0];
  return row ? { ...toWorkflowRun(row), ...toWorkflowRunLineage(row) } : null;
}

/** The run with its lineage; `workflow.run_not_found` when it does not exist in `scope`. */
export async function getWorkflowRun(db: Db, input: WorkflowRunRef): Promise<WorkflowRunWithLineage> {
  const run = await findWorkflowRun(db, input);
  if (!run) throw runNotFound(input.workflowRunId);
  return run;
}

function statusList(status: WorkflowRunStatus | WorkflowRunStatus[] | undefined): string[] | null {
  if (status === undefined) return null;
  return Array.isArray(status) ? status : [status];
}

/**
 * The filter's predicates on the run row `workflow_runs` (a list's or a count's). Waiting runs are live ones:
 * with `waitingForExternal: true` the statement also names the live statuses, which workflow_runs_status_idx
 * serves, so the read is the live runs, not every run newest first.
 */
function runFilter(filter: z.output<typeof filterSchema>): Sql {
  const waiting = filter.waitingForExternal ?? null;
  return sqltag`(${filter.workflowType ?? null}::text IS NULL OR workflow_type = ${filter.workflowType ?? null})
         AND (${statusList(filter.status)}::text[] IS NULL OR status::text = ANY(${statusList(filter.status)}::text[]))
         AND (${waiting}::boolean IS NULL OR ${runWaitingForExternal('workflow_runs')} = ${waiting}::boolean)
         ${waiting === true ? sqltag`AND status IN ('RUNNING', 'WAITING_FOR_EXTERNAL')` : empty}`;
}

/** Runs in `scope`, newest first, a page at a time (keyset on created_at, id). */
export async function listWorkflowRuns(db: Db, input: ListWorkflowRunsInput): Promise<Page<WorkflowRun>> {
  const parsed = parseInput(listSchema, input, INVALID);
  const s = scopeParams(parsed.scope);
  const [afterMicros, afterId] = parsed.cursor ? parsed.cursor.split(/:(.*)/s) : [null, null];
  const rows = await withTransaction(
    db,
    'list workflow runs',
    async ({ tx }) =>
      tx.$queryRaw<(WorkflowRunRow & WaitingForExternalColumn & { cursor_micros: string })[]>`
      SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS cursor_micros,
             ${runWaitingForExternal('workflow_runs')} AS waiting_for_external
        FROM runledger.workflow_runs
       WHERE ${inScope(s, 'organization_id')}
         AND ${runFilter(parsed)}
         AND (${afterMicros ?? null}::bigint IS NULL
              OR (created_at, id) < (to_timestamp(${afterMicros ?? null}::bigint / 1000000.0), ${afterId ?? null}::uuid))
       ORDER BY created_at DESC, id DESC
       LIMIT ${parsed.limit + 1}`,
  );
  const page = rows.slice(0, parsed.limit);
  const last = page.at(-1);
  return {
    items: page.map(toWorkflowRun),
    nextCursor: rows.length > parsed.limit && last ? `${last.cursor_micros}:${last.id}` : null,
  };
}

export async function countWorkflowRuns(db: Db, filter: WorkflowRunFilter): Promise<number> {
  const parsed = parseInput(filterSchema, filter, INVALID, 'filter');
  const s = scopeParams(parsed.scope);
  const rows = await withTransaction(
    db,
    'count workflow runs',
    async ({ tx }) =>
      tx.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_runs
       WHERE ${inScope(s, 'organization_id')}
         AND ${runFilter(parsed)}`,
  );
  return rows[0]?.n ?? 0;
}

/**
 * Steps of a run in topological (id) order, a page at a time;
 * `workflow.run_not_found` when the run is not visible in `scope`.
 * One statement: the run row proves visibility even when a page is empty.
 */
export async function listWorkflowSteps(db: Db, input: ListWorkflowStepsInput): Promise<Page<WorkflowStep>> {
  const ref = parseInput(listStepsSchema, input, INVALID);
  const s = scopeParams(ref.scope);
  const rows = await withTransaction(
    db,
    'list workflow steps',
    async ({ tx }) =>
      tx.$queryRaw<(WorkflowStepRow | { [K in keyof WorkflowStepRow]: null })[]>`
      SELECT ws.* FROM runledger.workflow_runs wr
        LEFT JOIN LATERAL (
          -- The view reads a step's RUNNING and start from its job (migration 20261223000000_step_running_derived).
          SELECT st.* FROM runledger.workflow_step_states st
           WHERE st.workflow_run_id = wr.id AND (${ref.cursor ?? null}::uuid IS NULL OR st.id > ${ref.cursor ?? null}::uuid)
           ORDER BY st.id
           LIMIT ${ref.limit + 1}::int
        ) ws ON true
       WHERE wr.id = ${ref.workflowRunId}::uuid AND ${inScope(s, 'wr.organization_id')}
       ORDER BY ws.id`,
  );
  if (rows.length === 0) throw runNotFound(ref.workflowRunId);
  const steps = rows.filter((row): row is WorkflowStepRow => row.id !== null);
  const page = steps.slice(0, ref.limit);
  return { items: page.map(toWorkflowStep), nextCursor: steps.length > ref.limit ? page[page.length - 1]!.id : null };
}

/**
 * Edges of a run ordered by (prerequisite, dependent) step id, a page at a
 * time; `workflow.run_not_found` when the run is not visible in `scope`.
 */
export async function listWorkflowStepDependencies(db: Db, input: ListWorkflowStepsInput): Promise<Page<WorkflowStepDependency>> {
  const ref = parseInput(listDependenciesSchema, input, INVALID);
  const s = scopeParams(ref.scope);
  const [afterPrerequisite, afterDependent] = ref.cursor ? ref.cursor.split(':') : [null, null];
  const rows = await withTransaction(
    db,
    'list workflow step dependencies',
    async ({ tx }) =>
      tx.$queryRaw<(WorkflowStepDependencyRow | { [K in keyof WorkflowStepDependencyRow]: null })[]>`
      SELECT d.workflow_run_id, d.prerequisite_step_id, d.prerequisite_step_key,
             d.dependent_step_id, d.dependent_step_key, d.release_mode
        FROM runledger.workflow_runs wr
        LEFT JOIN LATERAL (
          SELECT e.workflow_run_id, e.prerequisite_step_id, p.step_key AS prerequisite_step_key,
                 e.dependent_step_id, c.step_key AS dependent_step_key, e.release_mode
            FROM runledger.workflow_step_dependencies e
            JOIN runledger.workflow_steps p ON p.id = e.prerequisite_step_id
            JOIN runledger.workflow_steps c ON c.id = e.dependent_step_id
           WHERE e.workflow_run_id = wr.id
             AND (${afterPrerequisite ?? null}::uuid IS NULL
                  OR (e.prerequisite_step_id, e.dependent_step_id) > (${afterPrerequisite ?? null}::uuid, ${afterDependent ?? null}::uuid))
           ORDER BY e.prerequisite_step_id, e.dependent_step_id
           LIMIT ${ref.limit + 1}::int
        ) d ON true
       WHERE wr.id = ${ref.workflowRunId}::uuid AND ${inScope(s, 'wr.organization_id')}
       ORDER BY d.prerequisite_step_id, d.dependent_step_id`,
  );
  if (rows.length === 0) throw runNotFound(ref.workflowRunId);
  const edges = rows.filter((row): row is WorkflowStepDependencyRow => row.prerequisite_step_id !== null);
  const page = edges.slice(0, ref.limit);
  const last = page.at(-1);
  return {
    items: page.map(toWorkflowStepDependency),
    nextCursor: edges.length > ref.limit && last ? `${last.prerequisite_step_id}:${last.dependent_step_id}` : null,
  };
}
