/**
 * The runs list's metadata filter (`meta=key=value` on api/runs): runs whose
 * metadata holds `key` with the value `value` (compared as text, so
 * `batch=7` matches the number 7 and the string "7"), with the list's type
 * and status filters. No index serves a jsonb field of any key, and a GIN
 * index would cost every run enqueue, so like the key search (search.ts) it
 * reads a bounded window, the newest METADATA_WINDOW runs in scope, and says
 * so in its answer. Half the key search's window: reading a jsonb field costs
 * more per row than a key's substring (docs/operate/performance.md). Pinned
 * by test/integration/dashboard-insights-plans.test.ts.
 */
import { empty, sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { ValidationError } from '../errors/runledger-error.js';
import { UUID_REGEX } from '../validation/primitives.js';
import { toWorkflowRun, type WaitingForExternalColumn, type WorkflowRun, type WorkflowRunRow } from '../model/workflow-rows.js';
import { inScopeByKind, runWaitingForExternal } from '../db/fragments.js';

/** Runs (in scope, newest first) the metadata filter reads. */
export const METADATA_WINDOW = 5_000;
const MAX_LIMIT = 500;
const DEFAULT_LIMIT = 50;

export interface MetadataFilter {
  scope: Scope;
  key: string;
  value: string;
  type?: string;
  statuses?: string[];
  /** Waiting on a person or not (WorkflowRun.waitingForExternal). */
  waitingForExternal?: boolean;
  cursor?: string;
  limit?: number;
}

export interface MetadataReport {
  kind: 'metadata';
  key: string;
  value: string;
  searchedNewest: number;
}

/** `key=value` (the first `=` splits; the key is non-blank). */
export function parseMetadataFilter(raw: string): { key: string; value: string } {
  const at = raw.indexOf('=');
  const key = at < 0 ? '' : raw.slice(0, at).trim();
  if (key === '') throw new ValidationError('dashboard.invalid_input', 'meta', 'meta is key=value, such as customer=acme.');
  return { key, value: raw.slice(at + 1).trim() };
}

/** The statement, for the plan test to EXPLAIN. */
export function runMetadataQuery(filter: MetadataFilter): Sql {
  const limit = filter.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ValidationError('dashboard.invalid_input', 'limit', `limit is 1 to ${MAX_LIMIT}.`);
  if (filter.cursor !== undefined && !UUID_REGEX.test(filter.cursor))
    throw new ValidationError('dashboard.invalid_input', 'cursor', 'The cursor is not one this list returned.');
  const w = sqltag`w`;
  // Newest first as the key search reads them: admin (and rows without an organization) through the primary key
  // (UUIDv7 ids sort by creation), an organization through its own index.
  const order = filter.scope.kind === 'organization' ? sqltag`w.created_at DESC, w.id DESC` : sqltag`w.id DESC`;
  return sqltag`
    SELECT wr.*, ${runWaitingForExternal('wr')} AS waiting_for_external
      FROM (SELECT w.id FROM (SELECT w.id, w.workflow_type, w.status, w.metadata FROM runledger.workflow_runs w WHERE ${inScopeByKind(filter.scope, sqltag`${w}.organization_id`)} ORDER BY ${order} LIMIT ${METADATA_WINDOW}::int) w
             WHERE w.metadata ->> ${filter.key}::text = ${filter.value}::text
               ${filter.type === undefined ? empty : sqltag`AND w.workflow_type = ${filter.type}::text`}
               ${filter.statuses === undefined ? empty : sqltag`AND w.status::text = ANY(${filter.statuses}::text[])`}
               ${filter.waitingForExternal === undefined ? empty : sqltag`AND ${runWaitingForExternal(w)} = ${filter.waitingForExternal}::boolean`}
               ${filter.cursor === undefined ? empty : sqltag`AND w.id < ${filter.cursor.toLowerCase()}::uuid`}
             ORDER BY w.id DESC LIMIT ${limit + 1}::int) m
      CROSS JOIN LATERAL (SELECT * FROM runledger.workflow_runs wr WHERE wr.id = m.id) wr
     ORDER BY wr.id DESC`;
}

export async function filterRunsByMetadata(
  db: Db,
  filter: MetadataFilter,
): Promise<{ items: WorkflowRun[]; nextCursor: string | null; search: MetadataReport }> {
  const rows = await withStatement(
    db,
    'dashboard run metadata filter',
    async (tx) => tx.$queryRaw<(WorkflowRunRow & WaitingForExternalColumn)[]>(...asTemplate(runMetadataQuery(filter))),
    {
      readCommitted: false,
    },
  );
  const limit = filter.limit ?? DEFAULT_LIMIT;
  const page = rows.slice(0, limit);
  return {
    items: page.map(toWorkflowRun),
    nextCursor: rows.length > limit ? page[page.length - 1]!.id : null,
    search: { kind: 'metadata', key: filter.key, value: filter.value, searchedNewest: METADATA_WINDOW },
  };
}
