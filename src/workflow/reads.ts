/**
 * Reads of runs, steps and edges, always within an exact scope (see
 * src/db/scope.ts). Lists page by keyset (created_at, id descending), never
 * by offset.
 */
import { z } from 'zod';
import { withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { storableText, uuid } from '../validation/primitives.js';
import {
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
} from './rows.js';

const INVALID = 'workflow.invalid_input';
const runStatus = z.enum(['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED']);

const filterSchema = z.strictObject({
  scope: scopeSchema,
  workflowType: storableText.min(1).optional(),
  status: z.union([runStatus, z.array(runStatus).min(1)]).optional(),
});
const listSchema = filterSchema.extend({
  limit: z.number().int().min(1).max(500).default(50),
  /** The `nextCursor` of the previous page. */
  after: z.string().regex(/^[0-9]+:[0-9a-f-]{36}$/i, 'must be a cursor returned by listWorkflowRuns').optional(),
});

export interface WorkflowRunFilter {
  scope: Scope;
  workflowType?: string;
  status?: WorkflowRunStatus | WorkflowRunStatus[];
}
export interface ListWorkflowRunsInput extends WorkflowRunFilter {
  limit?: number;
  after?: string;
}
export interface WorkflowRunPage {
  runs: WorkflowRun[];
  /** Pass as `after` for the next page; null on the last page. */
  nextCursor: string | null;
}

async function runInScope(db: Db, scope: Scope, workflowRunId: string): Promise<WorkflowRun | null> {
  const id = parseInput(uuid, workflowRunId, INVALID);
  const s = scopeParams(parseInput(scopeSchema, scope, INVALID));
  const rows = await withTransaction(db, 'read workflow run', async ({ tx }) =>
    tx.$queryRaw<WorkflowRunRow[]>`
      SELECT * FROM runledger.workflow_runs
       WHERE id = ${id}::uuid AND (${s.all} OR organization_id IS NOT DISTINCT FROM ${s.organizationId}::text)`,
  );
  return rows[0] ? toWorkflowRun(rows[0]) : null;
}

export async function findWorkflowRun(db: Db, scope: Scope, workflowRunId: string): Promise<WorkflowRun | null> {
  return runInScope(db, scope, workflowRunId);
}

export async function getWorkflowRun(db: Db, scope: Scope, workflowRunId: string): Promise<WorkflowRun> {
  const run = await runInScope(db, scope, workflowRunId);
  if (!run) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId } });
  return run;
}

function statusList(status: WorkflowRunStatus | WorkflowRunStatus[] | undefined): string[] | null {
  if (status === undefined) return null;
  return Array.isArray(status) ? status : [status];
}

export async function listWorkflowRuns(db: Db, input: ListWorkflowRunsInput): Promise<WorkflowRunPage> {
  const parsed = parseInput(listSchema, input, INVALID);
  const s = scopeParams(parsed.scope);
  const [afterMicros, afterId] = parsed.after ? parsed.after.split(/:(.*)/s) : [null, null];
  const rows = await withTransaction(db, 'list workflow runs', async ({ tx }) =>
    tx.$queryRaw<(WorkflowRunRow & { cursor_micros: string })[]>`
      SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS cursor_micros
        FROM runledger.workflow_runs
       WHERE (${s.all} OR (${s.organizationId}::text IS NULL AND organization_id IS NULL) OR organization_id = ${s.organizationId}::text)
         AND (${parsed.workflowType ?? null}::text IS NULL OR workflow_type = ${parsed.workflowType ?? null})
         AND (${statusList(parsed.status)}::text[] IS NULL OR status::text = ANY(${statusList(parsed.status)}::text[]))
         AND (${afterMicros ?? null}::bigint IS NULL
              OR (created_at, id) < (to_timestamp(${afterMicros ?? null}::bigint / 1000000.0), ${afterId ?? null}::uuid))
       ORDER BY created_at DESC, id DESC
       LIMIT ${parsed.limit + 1}`,
  );
  const page = rows.slice(0, parsed.limit);
  const last = page.at(-1);
  return {
    runs: page.map(toWorkflowRun),
    nextCursor: rows.length > parsed.limit && last ? `${last.cursor_micros}:${last.id}` : null,
  };
}

export async function countWorkflowRuns(db: Db, filter: WorkflowRunFilter): Promise<number> {
  const parsed = parseInput(filterSchema, filter, INVALID);
  const s = scopeParams(parsed.scope);
  const rows = await withTransaction(db, 'count workflow runs', async ({ tx }) =>
    tx.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_runs
       WHERE (${s.all} OR (${s.organizationId}::text IS NULL AND organization_id IS NULL) OR organization_id = ${s.organizationId}::text)
         AND (${parsed.workflowType ?? null}::text IS NULL OR workflow_type = ${parsed.workflowType ?? null})
         AND (${statusList(parsed.status)}::text[] IS NULL OR status::text = ANY(${statusList(parsed.status)}::text[]))`,
  );
  return rows[0]?.n ?? 0;
}

/** Steps of a run in topological (id) order; empty when the run is not visible in `scope`. */
export async function listWorkflowSteps(db: Db, scope: Scope, workflowRunId: string): Promise<WorkflowStep[]> {
  const id = parseInput(uuid, workflowRunId, INVALID);
  const s = scopeParams(parseInput(scopeSchema, scope, INVALID));
  const rows = await withTransaction(db, 'list workflow steps', async ({ tx }) =>
    tx.$queryRaw<WorkflowStepRow[]>`
      SELECT ws.* FROM runledger.workflow_steps ws
        JOIN runledger.workflow_runs wr ON wr.id = ws.workflow_run_id
       WHERE ws.workflow_run_id = ${id}::uuid AND (${s.all} OR wr.organization_id IS NOT DISTINCT FROM ${s.organizationId}::text)
       ORDER BY ws.id`,
  );
  return rows.map(toWorkflowStep);
}

export async function listWorkflowStepDependencies(db: Db, scope: Scope, workflowRunId: string): Promise<WorkflowStepDependency[]> {
  const id = parseInput(uuid, workflowRunId, INVALID);
  const s = scopeParams(parseInput(scopeSchema, scope, INVALID));
  const rows = await withTransaction(db, 'list workflow step dependencies', async ({ tx }) =>
    tx.$queryRaw<WorkflowStepDependencyRow[]>`
      SELECT d.workflow_run_id, d.prerequisite_step_id, p.step_key AS prerequisite_step_key,
             d.dependent_step_id, c.step_key AS dependent_step_key, d.release_mode
        FROM runledger.workflow_step_dependencies d
        JOIN runledger.workflow_runs wr ON wr.id = d.workflow_run_id
        JOIN runledger.workflow_steps p ON p.id = d.prerequisite_step_id
        JOIN runledger.workflow_steps c ON c.id = d.dependent_step_id
       WHERE d.workflow_run_id = ${id}::uuid AND (${s.all} OR wr.organization_id IS NOT DISTINCT FROM ${s.organizationId}::text)
       ORDER BY d.prerequisite_step_id, d.dependent_step_id`,
  );
  return rows.map(toWorkflowStepDependency);
}
