import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { createWorker, type AnyJobDefinition } from 'runledger';
import { PrismaClient } from './generated/prisma/client.js'; // your generated client

// One pool: your Prisma client runs on it, and the worker sends its own statements (claims, completions,
// heartbeats) to it directly, without Prisma's query layer. Handlers keep using `prisma` as before.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
export const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });

export function poolWorker(handlers: AnyJobDefinition[]) {
  // Behind PgBouncer < 1.21 add `preparedStatements: false`.
  return createWorker({ db: pool, listenConnectionString: process.env.DATABASE_URL, handlers, concurrency: 10 });
}
