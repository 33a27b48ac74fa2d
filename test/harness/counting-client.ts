/**
 * A Prisma client on one connection that counts every statement it sends
 * (BEGIN and COMMIT included), counted at the driver: raw queries bypass
 * Prisma's own query extensions, the pg client sees them all.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { preparedStatementName } from '../../src/client/connect.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import type pg from 'pg';
import { poolDb } from '../../src/client/from-pool.js';
import type { Db } from '../../src/client/types.js';
import type { TestDatabase } from './database.js';

export interface CountingClient {
  client: PrismaClient;
  /** Statements sent so far. */
  count(): number;
  close(): Promise<void>;
}

export function countingClient(db: TestDatabase): CountingClient {
  const pool = db.newPool({ max: 1 });
  const count = countStatements(pool);
  const client = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  return { client, count, close: () => client.$disconnect() };
}

/** The same count on a `poolDb` client (one connection); the pool closes with the test database. */
export function countingPoolDb(db: TestDatabase): { client: Db; count(): number } {
  const pool = db.newPool({ max: 1 });
  return { client: poolDb(pool) as Db, count: countStatements(pool) };
}

/** Counts every statement the pool's connections send, from now on. */
export function countStatements(pool: pg.Pool): () => number {
  let sent = 0;
  pool.on('connect', (connection) => {
    const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
    (connection as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      sent += 1;
      return query(...args);
    };
  });
  return () => sent;
}
