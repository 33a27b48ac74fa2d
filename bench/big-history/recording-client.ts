/**
 * A runledger Prisma client (the bench's usual set-up: adapter-pg with
 * `preparedStatementName`) whose pool records the statements it sends while
 * `record` runs, so the bench can EXPLAIN exactly what a library call asked of
 * the server, on the database it ran on, without copying the library's SQL.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient, runledger } from '../runledger-package.js';

// The built package (bench/runledger-package.ts), as the other runledger variants.
const { preparedStatementName } = runledger;

export interface RecordedStatement {
  text: string;
  values: unknown[];
}

export interface RecordingPrisma {
  prisma: PrismaClient;
  /** Runs `fn`, returning its result and the runledger statements it sent (transaction control left out). */
  record<R>(fn: () => Promise<R>): Promise<{ result: R; statements: RecordedStatement[] }>;
  close(): Promise<void>;
}

export function createRecordingPrisma(url: string, max: number): RecordingPrisma {
  let recording: RecordedStatement[] | null = null;
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', (error) => console.error(`[bench] idle runledger connection: ${error.message}`));
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [first, second] = args;
      const text = typeof first === 'string' ? first : (first as { text?: string } | undefined)?.text;
      const values = typeof first === 'string' ? second : (first as { values?: unknown[] } | undefined)?.values;
      if (recording && text?.includes('runledger.')) recording.push({ text, values: Array.isArray(values) ? values : [] });
      return query(...args);
    };
  });
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  return {
    prisma,
    async record(fn) {
      recording = [];
      try {
        const result = await fn();
        return { result, statements: recording };
      } finally {
        recording = null;
      }
    },
    async close() {
      await prisma.$disconnect();
      if (!(pool as unknown as { ending?: boolean }).ending) await pool.end();
    },
  };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

export interface StatementPlan {
  /** `table: index` or `table: Seq Scan` for every scan of a table, in plan order. */
  scans: string[];
  planningMs: number | null;
  executionMs: number | null;
  /** Shared buffers hit + read by the whole plan (EXPLAIN ANALYZE, BUFFERS). */
  buffers: number | null;
}

function scansOf(node: PlanNode): string[] {
  const own = node['Relation Name'] ? [`${node['Relation Name']}: ${node['Index Name'] ?? node['Node Type']}`] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scansOf)];
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of a recorded statement on `client`, inside a
 * transaction rolled back afterwards (a claim or a purge statement changes
 * rows; the plan is what is wanted, not the change).
 */
export async function explainRecorded(client: pg.Client, statement: RecordedStatement): Promise<StatementPlan> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{
      'QUERY PLAN': { Plan: PlanNode & { 'Shared Hit Blocks'?: number; 'Shared Read Blocks'?: number }; 'Planning Time'?: number; 'Execution Time'?: number }[];
    }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`, statement.values);
    const plan = rows[0]!['QUERY PLAN'][0]!;
    const hit = plan.Plan['Shared Hit Blocks'];
    const read = plan.Plan['Shared Read Blocks'];
    return {
      scans: [...new Set(scansOf(plan.Plan))],
      planningMs: plan['Planning Time'] ?? null,
      executionMs: plan['Execution Time'] ?? null,
      buffers: hit === undefined ? null : hit + (read ?? 0),
    };
  } finally {
    await client.query('ROLLBACK');
  }
}
