/**
 * The Prisma client the runledger variants use: runledger's recommended
 * set-up (adapter-pg with `preparedStatementName`, as its own worker and CLI
 * use) on a pg.Pool the bench owns, whose connections count every statement
 * they send. Counting in the client is exact for what runledger asks of the
 * server (BEGIN and COMMIT included), needs no server extension, and costs a
 * counter increment per query.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient, runledger } from '../runledger-package.js';

const { preparedStatementName } = runledger;

export interface CountingPrisma {
  prisma: PrismaClient;
  /** The pool under `prisma` (createWorker's `db: pool` variant sends through it, counted alike). */
  pool: pg.Pool;
  /** Statements sent so far on every connection of the pool. */
  statements(): number;
}

export function createCountingPrisma(url: string, max: number): CountingPrisma & { close(): Promise<void> } {
  let statements = 0;
  const pool = new pg.Pool({ connectionString: url, max });
  // An idle connection that dies (e.g. its database dropped after a failed run) must not crash the bench.
  pool.on('error', (error) => console.error(`[bench] idle runledger connection: ${error.message}`));
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      statements += 1;
      return query(...args);
    };
  });
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  return {
    prisma,
    pool,
    statements: () => statements,
    async close() {
      await prisma.$disconnect();
      // The adapter does not own a pool it was given; end it here (idempotent guard: pg throws on a second end()).
      if (!(pool as unknown as { ending?: boolean }).ending) await pool.end();
    },
  };
}

/**
 * Runs `fn` with a started client whose pool has made one round trip (the
 * harness commit every variant subtracts) and closes everything afterwards.
 */
export async function withCountingPrisma<R>(url: string, max: number, fn: (client: CountingPrisma) => Promise<R>): Promise<R> {
  const client = createCountingPrisma(url, max);
  try {
    await client.prisma.$queryRaw`SELECT 1`;
    return await fn(client);
  } finally {
    await client.close();
  }
}
