import { createTestDatabase, findPgBouncer, PGBOUNCER_MISSING, startPgBouncer } from 'runledger/testing';

/** A test database behind a throwaway transaction-mode PgBouncer: the pooled URL for your client, the direct one for LISTEN. */
export async function pooledTestDatabase() {
  if (!findPgBouncer()) throw new Error(PGBOUNCER_MISSING); // or skip the test, saying why
  const database = await createTestDatabase();
  const pooler = await startPgBouncer({ serverUrl: database.url });
  return {
    pooledUrl: pooler.url, // the same database through the pooler: PrismaPg without statementNameGenerator, or `?pgbouncer=true`
    directUrl: database.url, // LISTEN (`listenConnectionString`, the CLI's `--listen-url`) and `prisma migrate deploy`
    async stop() {
      await pooler.stop();
      await database.drop();
    },
  };
}
