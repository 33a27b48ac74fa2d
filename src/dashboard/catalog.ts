/**
 * `api/catalog`: the job types of the definitions catalog (job_definitions,
 * synced from the workers' definitions), for the type filters' suggestions.
 * The catalog is the deployment's, not a tenant's: it names job types, which
 * every organization's jobs share, and holds no row of any organization.
 * One statement over a table with one row per job type (bounded anyway).
 */
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';

export const MAX_CATALOG_TYPES = 1_000;

export async function readCatalog(db: Db): Promise<{ jobTypes: string[] }> {
  const rows = await withStatement(
    db,
    'dashboard catalog',
    async (tx) => tx.$queryRaw<{ job_type: string }[]>`SELECT job_type FROM runledger.job_definitions ORDER BY job_type LIMIT ${MAX_CATALOG_TYPES}::int`,
    { readCommitted: false },
  );
  return { jobTypes: rows.map((row) => row.job_type) };
}
