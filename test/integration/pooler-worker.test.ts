/**
 * The worker as it runs behind a transaction-mode PgBouncer (< 1.21): its
 * own client through the pooler with unnamed statements (`pgbouncer=true`),
 * its LISTEN on the database's direct URL, the notifications of pooled
 * transactions reaching it; and, with no direct URL given, a pooled worker
 * (or the CLI's dashboard) that does without LISTEN instead of leaving one on
 * a pooled backend.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { startDashboardServer } from '../../src/cli/dashboard.js';
import { adminScope, createWorkflowRunListener, enqueueJob, enqueueWorkflowRunHandle, workflow } from '../../src/index.js';
import { databaseUrl } from '../../src/testing/test-database.js';
import { createWorker, defineJob, silentLogger, type Worker, type WorkerOptions } from '../../src/worker/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/worker/listener.js';
import { nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { pooledBackends, poolerAvailable } from '../harness/pooler.js';

const db = useTestDatabase();
const available = poolerAvailable('pooler worker tests');

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});

/** This database through the pooler, as a host behind PgBouncer < 1.21 writes it. */
const pooled = () => databaseUrl(db.poolerUrl!, db.name, { pgbouncer: 'true' });

function startWorker(options: Omit<WorkerOptions, 'db'>): Worker {
  const worker = createWorker({ reaper: false, schedules: false, intents: false, ...options });
  workers.push(worker);
  return worker;
}

async function listenerSessions(): Promise<number> {
  const rows = await db
    .newPool({ max: 1 })
    .query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [db.name, LISTENER_APPLICATION_NAME]);
  return rows.rows[0]!.n;
}

describe.skipIf(!available)('the worker behind a transaction-mode PgBouncer', () => {
  it("runs the harness's Prisma client through the pooler in the pooler project, and direct otherwise", async () => {
    const [row] = await db.prisma.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const { serverPids } = await pooledBackends(inject('runledgerPoolerAdminUrl'), db.name);
    expect(serverPids.includes(row!.pid)).toBe(db.viaPooler);
  });

  it('runs a fan-in workflow through the pooler, woken by NOTIFY on the direct URL long before its next poll', async () => {
    const seen: string[] = [];
    const step = defineJob('pooled.step', z.object({ name: z.string() }), async (payload) => {
      seen.push(payload.name);
      return { name: payload.name };
    });
    const worker = startWorker({ connectionString: pooled(), listenConnectionString: db.url, handlers: [step], logger: silentLogger, pollIntervalMs: 60_000 });
    const idle = nextEvent(worker, 'worker:idle');
    // The run's result arrives with its commit's NOTIFY, which can precede the worker's own count of that success.
    let fifth!: () => void;
    const fiveSucceeded = new Promise<void>((resolve) => (fifth = resolve));
    let successes = 0;
    worker.on('job:success', () => {
      successes += 1;
      if (successes === 5) fifth();
    });
    await worker.start();
    await idle; // the start-up claim found nothing: from here only a notification wakes the worker
    expect(await listenerSessions()).toBe(1);

    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'pooled.step', 5_000);
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'pooled.step', payload: { name: 'direct' } });
    expect((await succeeded).job.jobId).toBe(jobId);

    const listener = await createWorkflowRunListener({ connectionString: db.url });
    try {
      const handle = await enqueueWorkflowRunHandle(
        db.prisma,
        workflow('pooled.fan-in')
          .job('a', 'pooled.step', { name: 'a' })
          .job('b', 'pooled.step', { name: 'b' })
          .job('c', 'pooled.step', { name: 'c' })
          .job('join', 'pooled.step', { name: 'join' })
          .afterSuccess('join', ['a', 'b', 'c'])
          .resultStep('join')
          .build(),
        { listener, pollIntervalMs: 60_000 },
      );
      expect(await handle.getResult({ timeoutMs: 15_000 })).toEqual({ name: 'join' });
    } finally {
      await listener.close();
    }
    expect(seen.slice(0, 1)).toEqual(['direct']);
    expect(seen.at(-1)).toBe('join');
    await fiveSucceeded;
    expect(worker.stats()).toMatchObject({ succeeded: 5, failed: 0 });
  });

  it('given only a pgbouncer=true connection string, polls and LISTENs nowhere (a LISTEN would stay on a pooled backend)', async () => {
    const infos: string[] = [];
    const logger = { ...silentLogger, info: (message: string) => void infos.push(message) };
    const job = defineJob('pooled.poll', z.object({}), async () => 'polled');
    const worker = startWorker({ connectionString: pooled(), handlers: [job], logger, pollIntervalMs: 50 });
    await worker.start();
    expect(infos.some((m) => m.startsWith('wake-ups: polling only'))).toBe(true);
    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'pooled.poll', 10_000);
    await enqueueJob(db.prisma, { jobType: 'pooled.poll', payload: {} });
    await succeeded;
    expect(await listenerSessions()).toBe(0);
  });

  it('serves the CLI dashboard without a live feed when its URL has pgbouncer=true, with one on the direct URL or --listen-url', async () => {
    const live = async (connectionString: string, listenUrl?: string) => {
      const context = {
        json: false,
        scope: adminScope(),
        db: () => db.newClient({ max: 2 }) as never,
        print: () => undefined,
        connectionString: () => connectionString,
        connectTimeoutMs: () => 10_000,
      };
      const running = await startDashboardServer(context, { port: 0, host: '127.0.0.1', readOnly: true, basePath: '', ...(listenUrl ? { listenUrl } : {}) });
      try {
        return ((await (await fetch(`${running.url}api/session`)).json()) as { live: boolean }).live;
      } finally {
        await running.close();
      }
    };
    expect(await live(pooled())).toBe(false);
    expect(await live(db.url)).toBe(true);
    expect(await live(pooled(), db.url)).toBe(true);
  });
});
