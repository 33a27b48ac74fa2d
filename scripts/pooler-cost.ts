/**
 * What naming statements is worth, and what PgBouncer costs, on this machine:
 * `npx tsx --tsconfig tsconfig.json scripts/pooler-cost.ts`. On an embedded
 * PostgreSQL 18, for each of direct with named statements (runledger's
 * default), direct unnamed, and through a transaction-mode PgBouncer 1.18
 * unnamed (`pgbouncer=true`): the latency of 300 single `enqueueJob` calls
 * and how fast a worker (concurrency 10, polling) drains 5,000 jobs. Two
 * rounds, each on a fresh database. Needs the pgbouncer binary.
 */
import { z } from 'zod';
import { createPrismaClient } from '../src/client/connect.js';
import { enqueueJob, enqueueJobs } from '../src/index.js';
import { startPgBouncer } from '../src/testing/pgbouncer.js';
import { startPostgresServer } from '../src/testing/postgres-server.js';
import { cloneDatabase, createMigratedTemplate, databaseUrl } from '../src/testing/test-database.js';
import { createWorker, defineJob, silentLogger } from '../src/worker/index.js';

const server = await startPostgresServer({ settings: { fsync: 'off', synchronous_commit: 'off', max_connections: '300' } });
const template = await createMigratedTemplate(server.url);
const bouncer = await startPgBouncer({ serverUrl: server.url });
const JOBS = 5000;
const modes = [
  ['direct, named statements', (db: string) => databaseUrl(server.url, db)],
  ['direct, unnamed', (db: string) => databaseUrl(server.url, db, { pgbouncer: 'true' })],
  ['PgBouncer 1.18 transaction mode, unnamed', (db: string) => databaseUrl(bouncer.url, db, { pgbouncer: 'true' })],
] as const;
for (let round = 0; round < 2; round += 1) {
  for (const [label, urlOf] of modes) {
    const name = await cloneDatabase(server.url, template);
    const url = urlOf(name);
    const prisma = createPrismaClient(url, { max: 4 });
    const single: number[] = [];
    for (let i = 0; i < 300; i += 1) {
      const t = performance.now();
      await enqueueJob(prisma, { jobType: 'm.single', payload: { i } });
      single.push(performance.now() - t);
    }
    for (let i = 0; i < JOBS; i += 1000)
      await enqueueJobs(
        prisma,
        Array.from({ length: 1000 }, (_, n) => ({ jobType: 'm.drain', payload: { n: i + n } })),
      );
    let done = 0;
    let finish!: () => void;
    const all = new Promise<void>((r) => {
      finish = r;
    });
    const handler = defineJob('m.drain', z.object({ n: z.number() }), async () => {
      done += 1;
      if (done === JOBS) finish();
      return null;
    });
    const worker = createWorker({
      connectionString: url,
      handlers: [handler],
      concurrency: 10,
      logger: silentLogger,
      reaper: false,
      schedules: false,
      intents: false,
      listen: false,
      pollIntervalMs: 20,
    });
    const t0 = performance.now();
    await worker.start();
    await all;
    const ms = performance.now() - t0;
    await worker.stop();
    await prisma.$disconnect();
    single.sort((a, b) => a - b);
    console.log(
      `round ${round + 1} | ${label} | enqueueJob p50 ${single[150]!.toFixed(2)} ms p95 ${single[285]!.toFixed(2)} ms | worker drain ${JOBS} jobs: ${(JOBS / (ms / 1000)).toFixed(0)} jobs/s`,
    );
  }
}
await bouncer.stop();
await server.stop();
process.exit(0);
