import { createTestDatabase, runUntilIdle, stopTestServer } from 'runledger/testing';
import type { AnyJobDefinition, PrismaClientLike } from 'runledger';

/** `connect` makes your client on a database URL; `handlers` are your job definitions. */
export async function runJobsInTest(connect: (url: string) => PrismaClientLike, handlers: readonly AnyJobDefinition[]) {
  const database = await createTestDatabase(); // TEST_DATABASE_URL, else a container, else embedded PostgreSQL; migrated
  const prisma = connect(database.url);
  // ... enqueue inside your own transaction ...
  await runUntilIdle(prisma, handlers); // runs runnable jobs in-process until none is left
  await database.drop();
  await stopTestServer(); // after your last test (embedded PostgreSQL also stops at exit)
}
