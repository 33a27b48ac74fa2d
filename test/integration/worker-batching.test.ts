/**
 * Commits per job, measured by the database: pg_stat_database.xact_commit of
 * this file's database before and after a worker processes N jobs.
 *
 * Backends publish their counters lazily (at most once a second while
 * active, and at exit), so the measurement brackets the worker with
 * connections that have all exited: the producer enqueues and disconnects,
 * the worker runs on its own Prisma client and closes it on stop(), and the
 * counter is read from the server's maintenance database (so reading it adds
 * nothing to it) once no client backend is left on the test database and two
 * consecutive reads agree.
 */
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { enqueueJobs } from '../../src/index.js';
import { createWorker, defineJob, silentLogger } from '../../src/worker/index.js';
import { countdown, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

describe('completion batching', () => {
  it('commits far less than once per job when many jobs finish together', async () => {
    const jobs = 300;
    const producer = db.newClient();
    await enqueueJobs(
      producer,
      Array.from({ length: jobs }, (_, n) => ({ jobType: 'batch.quick', payload: { n } })),
    );
    await producer.$disconnect();

    const admin = new pg.Client({ connectionString: inject('runledgerServerUrl') });
    await admin.connect();
    try {
      const before = await settledCommitCount(admin, db.name);
      const handler = defineJob('batch.quick', z.object({ n: z.number() }), async (payload) => payload.n);
      const worker = createWorker({
        connectionString: db.url,
        handlers: [handler],
        concurrency: 50,
        batchSize: 50,
        listen: false,
        reaper: false,
        logger: silentLogger,
      });
      const done = countdown(jobs);
      worker.on('job:success', done.arrive);
      await worker.start();
      await within(done.promise, 30_000, `${jobs} successes`);
      await worker.stop();
      const after = await settledCommitCount(admin, db.name);

      const perJob = (after - before) / jobs;
      console.info(`[worker batching] ${after - before} commits for ${jobs} jobs: ${perJob.toFixed(3)} per job`);
      // Recording each success on its own costs at least one commit per job; below half of that, batching is at work.
      expect(perJob).toBeLessThanOrEqual(0.5);
    } finally {
      await admin.end();
    }
  });
});

/** xact_commit of `database` once no client is connected to it and the counter has stopped moving. */
async function settledCommitCount(admin: pg.Client, database: string): Promise<number> {
  const deadline = Date.now() + 15_000;
  let previous: number | undefined;
  for (;;) {
    const { rows } = await admin.query<{ clients: number; commits: string }>(
      `SELECT (SELECT count(*)::int FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend') AS clients,
              (SELECT xact_commit FROM pg_stat_database WHERE datname = $1) AS commits`,
      [database],
    );
    const { clients, commits } = rows[0]!;
    const current = Number(commits);
    if (clients === 0 && current === previous) return current;
    previous = clients === 0 ? current : undefined;
    if (Date.now() > deadline) throw new Error(`commit counter of ${database} did not settle (clients: ${clients})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
