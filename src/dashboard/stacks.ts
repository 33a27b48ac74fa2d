/**
 * The stacks a job's failed attempts kept (job_attempts.error_stack, written
 * by the worker when a handler throws; src/job/errors.ts), newest
 * first, for the job page. Scoped like every read: a job outside the scope has
 * none. Reads the job's attempts by primary key (job_id, seq), at most
 * MAX_LISTED_STACKS of them.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, type Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { inScope } from '../db/fragments.js';

export const MAX_LISTED_STACKS = 20;

export interface AttemptStack {
  seq: string;
  runNumber: number;
  attempt: number;
  errorCode: string | null;
  stack: string;
}

export function attemptStacksQuery(scope: Scope, jobId: string): Sql {
  const s = scopeParams(scope);
  return sqltag`
    SELECT a.seq::text AS seq, a.run_number, a.attempt, a.error_code, a.error_stack
      FROM runledger.job_attempts a
      JOIN runledger.job_queue jq ON jq.id = a.job_id
     WHERE a.job_id = ${jobId}::uuid AND a.error_stack IS NOT NULL
       AND ${inScope(s, 'jq.organization_id')}
     ORDER BY a.seq DESC
     LIMIT ${MAX_LISTED_STACKS}`;
}

export async function readAttemptStacks(db: Db, scope: Scope, jobId: string): Promise<AttemptStack[]> {
  const rows = await withStatement(
    db,
    'dashboard attempt stacks',
    async (tx) =>
      tx.$queryRaw<{ seq: string; run_number: number; attempt: number; error_code: string | null; error_stack: string }[]>(
        ...asTemplate(attemptStacksQuery(scope, jobId)),
      ),
    { readCommitted: false },
  );
  return rows.map((row) => ({ seq: row.seq, runNumber: row.run_number, attempt: row.attempt, errorCode: row.error_code, stack: row.error_stack }));
}
