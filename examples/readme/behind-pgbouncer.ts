import { PrismaPg } from '@prisma/adapter-pg';
import { createWorker, type AnyJobDefinition } from 'runledger';
import { PrismaClient } from './generated/prisma/client.js'; // your generated client

// DATABASE_URL: through PgBouncer (transaction mode). DIRECT_DATABASE_URL: the server itself.
// PgBouncer < 1.21: no statementNameGenerator, so every statement is sent unnamed.
export const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL! }) });

export function pooledWorker(handlers: AnyJobDefinition[]) {
  // Everything through the pooler except LISTEN, which is session state and needs its own connection.
  return createWorker({ db: prisma, listenConnectionString: process.env.DIRECT_DATABASE_URL, handlers });
}

// A worker that makes its own client: `pgbouncer=true` turns statement names off (runledger removes the parameter).
export function ownClientWorker(handlers: AnyJobDefinition[]) {
  return createWorker({
    connectionString: `${process.env.DATABASE_URL!}?pgbouncer=true`,
    listenConnectionString: process.env.DIRECT_DATABASE_URL,
    handlers,
  });
}
