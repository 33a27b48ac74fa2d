/**
 * The dashboard's one search box over jobs and runs (`q` on api/jobs and
 * api/runs). What an operator pastes decides the search:
 *
 *   - a hex prefix of an id (4 to 32 hex digits, dashes anywhere ignored):
 *     rows whose id starts with it, as a range on the uuid primary key
 *     (`id BETWEEN prefix000… AND prefixfff…`), newest first, keyset pages.
 *     Index-backed however large the table: the range is the prefix's.
 *   - anything else (or `key:` before it, to search keys with a hex-looking
 *     text): a case-insensitive substring of the idempotency key, among the
 *     newest KEY_SEARCH_WINDOW rows in scope (an index read ordered by id
 *     DESC, bounded), plus, when the type is given, the row whose key is
 *     exactly the text at any age (the unique key index). No index serves a
 *     substring; adding a trigram index would cost every keyed enqueue, so the
 *     search is bounded instead and says so in its answer.
 *   - `id:` before a text forces an id prefix (and a bad one is an error).
 *
 * Scope: each statement is built for the scope's kind (admin: no filter; an
 * organization: `organization_id = $1`; no organization: `IS NULL`), the same
 * exact matching as src/db/scope.ts. The usual one-statement form with OR
 * would leave a generic plan unable to use the organization indexes, and the
 * key window would then walk the whole table for a small organization.
 */
import { sqltag, empty, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { ValidationError } from '../errors/runledger-error.js';
import { UUID_REGEX } from '../validation/primitives.js';
import { JOB_ROW_COLUMNS, toJob, type Job, type JobRow } from '../model/job-rows.js';
import { toWorkflowRun, type WaitingForExternalColumn, type WorkflowRun, type WorkflowRunRow } from '../model/workflow-rows.js';
import { inScopeByKind, runWaitingForExternal } from '../db/fragments.js';

/** Rows (in scope) a key substring search reads, newest first. On the plan test's 200k jobs: 2 to 20 ms (docs/operate/dashboard.md). */
export const KEY_SEARCH_WINDOW = 10_000;
/** The longest text searched (an idempotency key is at most 512 bytes). */
export const MAX_SEARCH_LENGTH = 512;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;
const MIN_PREFIX_DIGITS = 4;

export type SearchTerm = { kind: 'id_prefix'; prefix: string; lower: string; upper: string } | { kind: 'key_substring'; text: string };

/** What the answer says about the search it ran, for the page to show. */
export type SearchReport =
  | { kind: 'id_prefix'; prefix: string }
  | { kind: 'key_substring'; text: string; caseSensitive: false; searchedNewest: number; exactKeyAnyAge: boolean };

function asUuid(hex32: string): string {
  return `${hex32.slice(0, 8)}-${hex32.slice(8, 12)}-${hex32.slice(12, 16)}-${hex32.slice(16, 20)}-${hex32.slice(20)}`;
}

function idPrefix(hex: string): SearchTerm {
  const prefix = hex.toLowerCase();
  return { kind: 'id_prefix', prefix, lower: asUuid(prefix.padEnd(32, '0')), upper: asUuid(prefix.padEnd(32, 'f')) };
}

/** How a search text is read (see the header). `dashboard.invalid_input` naming `q` for an empty, too long, or bad `id:` text. */
export function parseSearch(raw: string): SearchTerm {
  const q = raw.trim();
  if (q === '' || q.length > MAX_SEARCH_LENGTH + 4) {
    throw new ValidationError('dashboard.invalid_input', 'q', `Search for 1 to ${MAX_SEARCH_LENGTH} characters.`);
  }
  const lowered = q.toLowerCase();
  if (lowered.startsWith('key:')) {
    const text = q.slice(4);
    if (text === '' || text.length > MAX_SEARCH_LENGTH)
      throw new ValidationError('dashboard.invalid_input', 'q', `Search keys for 1 to ${MAX_SEARCH_LENGTH} characters.`);
    return { kind: 'key_substring', text };
  }
  const forcedId = lowered.startsWith('id:');
  const candidate = (forcedId ? q.slice(3) : q).trim();
  const hex = candidate.replace(/-/g, '');
  if (/^[0-9a-f-]+$/i.test(candidate) && hex.length >= MIN_PREFIX_DIGITS && hex.length <= 32) return idPrefix(hex);
  if (forcedId) throw new ValidationError('dashboard.invalid_input', 'q', `An id prefix is ${MIN_PREFIX_DIGITS} to 32 hex digits.`);
  if (q.length > MAX_SEARCH_LENGTH) throw new ValidationError('dashboard.invalid_input', 'q', `Search for 1 to ${MAX_SEARCH_LENGTH} characters.`);
  return { kind: 'key_substring', text: q };
}

export interface SearchFilter {
  scope: Scope;
  term: SearchTerm;
  type?: string;
  statuses?: string[];
  /** Runs only: waiting on a person or not (WorkflowRun.waitingForExternal). */
  waitingForExternal?: boolean;
  cursor?: string;
  limit?: number;
}

export interface SearchPage<T> {
  items: T[];
  nextCursor: string | null;
  search: SearchReport;
}

/** The value the unique key indexes hold for the scope's organization (`COALESCE(organization_id, '')`), or null for admin. */
function keyIndexOrganization(scope: Scope): string | null {
  return scope.kind === 'admin' ? null : scope.kind === 'organization' ? scope.organizationId : '';
}

function pageSize(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ValidationError('dashboard.invalid_input', 'limit', `limit is 1 to ${MAX_LIMIT}.`);
  return limit;
}

function cursorId(cursor: string | undefined): string | null {
  if (cursor === undefined) return null;
  if (!UUID_REGEX.test(cursor)) throw new ValidationError('dashboard.invalid_input', 'cursor', 'The cursor is not one this search returned.');
  return cursor.toLowerCase();
}

/** What the answer says about the search it ran (see SearchReport). */
export function searchReport(filter: SearchFilter): SearchReport {
  const { term } = filter;
  return term.kind === 'id_prefix'
    ? { kind: 'id_prefix', prefix: term.prefix }
    : { kind: 'key_substring', text: term.text, caseSensitive: false, searchedNewest: KEY_SEARCH_WINDOW, exactKeyAnyAge: filter.type !== undefined };
}

interface Table {
  relation: Sql;
  alias: Sql;
  columns: Sql;
  typeColumn: Sql;
  /** The newest rows of a non-admin scope, in the order its organization index holds them. */
  scopedNewest: Sql;
}

const JOBS: Table = {
  relation: sqltag`runledger.job_queue`,
  alias: sqltag`jq`,
  columns: JOB_ROW_COLUMNS,
  typeColumn: sqltag`job_type`,
  // job_queue_org_created_idx (organization_id, id DESC)
  scopedNewest: sqltag`w.id DESC`,
};

const RUNS: Table = {
  relation: sqltag`runledger.workflow_runs`,
  alias: sqltag`wr`,
  columns: sqltag`wr.*, ${runWaitingForExternal(sqltag`wr`)} AS waiting_for_external`,
  typeColumn: sqltag`workflow_type`,
  // workflow_runs_org_created_idx (organization_id, created_at DESC, id DESC)
  scopedNewest: sqltag`w.created_at DESC, w.id DESC`,
};

/** The list filters (type, status, cursor) on a row aliased `alias`. */
function listFilters(alias: Sql, table: Table, filter: SearchFilter, after: string | null): Sql {
  return sqltag`
       ${filter.type === undefined ? empty : sqltag`AND ${alias}.${table.typeColumn} = ${filter.type}::text`}
       ${filter.statuses === undefined ? empty : sqltag`AND ${alias}.status::text = ANY(${filter.statuses}::text[])`}
       ${filter.waitingForExternal === undefined || table !== RUNS ? empty : sqltag`AND ${runWaitingForExternal(alias)} = ${filter.waitingForExternal}::boolean`}
       ${after === null ? empty : sqltag`AND ${alias}.id < ${after}::uuid`}`;
}

function searchQuery(table: Table, filter: SearchFilter): Sql {
  const { term, scope } = filter;
  const limit = pageSize(filter.limit);
  const after = cursorId(filter.cursor);
  const { relation, alias, columns } = table;
  if (term.kind === 'id_prefix') {
    // A range on the primary key (or, in an organization, on its index ending in id), walked newest first.
    return sqltag`
      SELECT ${columns}
        FROM ${relation} ${alias}
       WHERE ${alias}.id >= ${term.lower}::uuid AND ${alias}.id <= ${term.upper}::uuid
         AND ${inScopeByKind(scope, sqltag`${alias}.organization_id`)} ${listFilters(alias, table, filter, after)}
       ORDER BY ${alias}.id DESC
       LIMIT ${limit + 1}::int`;
  }
  const w = sqltag`w`;
  // Admin's newest through the primary key (UUIDv7 ids sort by creation); an organization's through its organization
  // index. Rows without an organization are read like admin's, skipping the others: the runs index orders by
  // created_at, and PostgreSQL 15 preferred a sequential scan and a sort to it when such rows are many.
  const order = scope.kind === 'organization' ? table.scopedNewest : sqltag`w.id DESC`;
  const window = sqltag`
      SELECT w.id FROM (SELECT w.id, w.idempotency_key, w.${table.typeColumn}, w.status FROM ${relation} w WHERE ${inScopeByKind(scope, sqltag`${w}.organization_id`)} ORDER BY ${order} LIMIT ${KEY_SEARCH_WINDOW}::int) w
       WHERE strpos(lower(w.idempotency_key), lower(${term.text}::text)) > 0 ${listFilters(w, table, filter, after)}`;
  const org = keyIndexOrganization(scope);
  const e = sqltag`e`;
  // The exact key at any age, through the unique key index (type, COALESCE(organization_id, ''), key).
  const exact =
    filter.type === undefined
      ? empty
      : sqltag`
      UNION
      SELECT e.id FROM ${relation} e
       WHERE e.idempotency_key = ${term.text}::text ${org === null ? empty : sqltag`AND COALESCE(e.organization_id, '') = ${org}::text`}
         AND ${inScopeByKind(scope, sqltag`${e}.organization_id`)} ${listFilters(e, table, filter, after)}`;
  // The matches are few (a page of a bounded window): each is fetched by primary key, so no plan walks the table to join them.
  return sqltag`
    SELECT ${columns}
      FROM (SELECT m.id FROM (${window} ${exact}) m ORDER BY m.id DESC LIMIT ${limit + 1}::int) m
      CROSS JOIN LATERAL (SELECT * FROM ${relation} ${alias} WHERE ${alias}.id = m.id AND ${inScopeByKind(scope, sqltag`${alias}.organization_id`)}) ${alias}
     ORDER BY ${alias}.id DESC`;
}

/** The whole statement of a job search, for the plan test to EXPLAIN. */
export function jobSearchQuery(filter: SearchFilter): Sql {
  return searchQuery(JOBS, filter);
}

/** The whole statement of a run search, for the plan test to EXPLAIN. */
export function runSearchQuery(filter: SearchFilter): Sql {
  return searchQuery(RUNS, filter);
}

function paged<Row extends { id: string }, T>(rows: Row[], limit: number | undefined, map: (row: Row) => T, filter: SearchFilter): SearchPage<T> {
  const size = pageSize(limit);
  const page = rows.slice(0, size);
  return { items: page.map(map), nextCursor: rows.length > size ? page[page.length - 1]!.id : null, search: searchReport(filter) };
}

/** Jobs matching the search in `filter.scope`, newest first (keyset on id). */
export async function searchJobs(db: Db, filter: SearchFilter): Promise<SearchPage<Job>> {
  const query = jobSearchQuery(filter);
  const rows = await withStatement(db, 'dashboard job search', async (tx) => tx.$queryRaw<JobRow[]>(...asTemplate(query)), { readCommitted: false });
  return paged(rows, filter.limit, toJob, filter);
}

/** Runs matching the search in `filter.scope`, newest first (keyset on id). */
export async function searchRuns(db: Db, filter: SearchFilter): Promise<SearchPage<WorkflowRun>> {
  const query = runSearchQuery(filter);
  const rows = await withStatement(
    db,
    'dashboard run search',
    async (tx) => tx.$queryRaw<(WorkflowRunRow & WaitingForExternalColumn)[]>(...asTemplate(query)),
    { readCommitted: false },
  );
  return paged(rows, filter.limit, toWorkflowRun, filter);
}
