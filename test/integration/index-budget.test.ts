/**
 * The index budget (issue 26, migration 20261223000001_index_budget): every index on the ledger's
 * write-heavy tables names the read it serves, in the catalog. A new index on one of these tables costs
 * every job (or step) an entry per write; this test makes its migration say what pays for it.
 */
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const BUDGETED = ['job_queue', 'job_attempts', 'job_events', 'workflow_steps'];

describe('index budget', () => {
  it('gives every index of job_queue, job_attempts, job_events and workflow_steps a comment naming its read', async () => {
    const rows = await db.prisma.$queryRaw<{ table: string; index: string; comment: string | null }[]>`
      SELECT t.relname AS table, i.relname AS index, obj_description(i.oid, 'pg_class') AS comment
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
       WHERE n.nspname = 'runledger' AND t.relname = ANY(${BUDGETED}::text[])
       ORDER BY 1, 2`;
    expect(new Set(rows.map((row) => row.table))).toEqual(new Set(BUDGETED));
    const missing = rows.filter((row) => !row.comment || row.comment.trim().length < 20).map((row) => `${row.table}.${row.index}`);
    expect(missing).toEqual([]);
  });
});
