/**
 * EXPLAIN (ANALYZE) of a statement as the plan tests read it: the scans it
 * ran (nodes naming a table), under a custom or a generic plan, so a test can
 * pin which indexes a statement uses and how many rows it reads.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { asTemplate } from '../../src/db/sql-template.js';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function scans(node: PlanNode): PlanNode[] {
  const own = node['Relation Name'] ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scans)];
}

/** The scans of `query`'s executed plan; `generic` forces the plan a prepared statement settles on. */
export async function explainScans(db: PrismaClient, query: Sql, generic: boolean): Promise<PlanNode[]> {
  return db.$transaction(async (tx) => {
    await tx.$executeRawUnsafe(`SET LOCAL plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    const [row] = await tx.$queryRaw<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(...asTemplate(sqltag`EXPLAIN (ANALYZE, FORMAT JSON) ${query}`));
    return scans(row!['QUERY PLAN'][0]!.Plan);
  });
}

/** Rows the scans handed up, over all their loops, plus those they read and filtered out. */
export const rowsRead = (nodes: PlanNode[]): number =>
  nodes.reduce((total, n) => total + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1), 0);

/**
 * The most shared buffers a read of at most `rows` rows may touch: an index page and a heap page per row, and its
 * descents. Within it a plan may read the heap per row, by bitmap or not at all (the visibility map, which
 * autovacuum sets on PostgreSQL 18 while a suite runs, moved one read from 428 to 9,621); reading the history
 * instead of the bound would not fit.
 */
export const buffersForRows = (rows: number): number => 2 * rows + 100;

const ROLLBACK = 'plans: rollback';

/**
 * EXPLAIN (ANALYZE, BUFFERS) of `query` in a transaction rolled back afterwards (a pick locks rows): its executed
 * plan and the shared buffers its execution touched (hit or read; planning's not counted). Buffers rather than
 * time: a test bounds the work a statement does, which a loaded machine does not change as it changes time.
 */
export async function explainBuffers(db: PrismaClient, query: Sql, generic: boolean): Promise<{ plan: PlanNode; buffers: number }> {
  let result: { plan: PlanNode; buffers: number } | undefined;
  await db
    .$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
      const [row] = await tx.$queryRaw<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(...asTemplate(sqltag`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${query}`));
      const plan = row!['QUERY PLAN'][0]!.Plan;
      result = { plan, buffers: (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0) };
      throw new Error(ROLLBACK);
    })
    .catch((error: unknown) => {
      if (!(error instanceof Error && error.message === ROLLBACK)) throw error;
    });
  return result!;
}
