/**
 * A worker whose database goes away while its handlers finish: the network
 * between its Prisma client and PostgreSQL is cut (test/harness/fault-proxy.ts)
 * for seconds, then restored. Its lease-fenced writes are retried until the
 * leases would expire, so every job runs exactly once (a handler counter per
 * job) and ends as its handler decided; a completion whose commit's response
 * was lost is recognised as committed, not reported as a lost lease.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createPrismaClient } from '../../src/client/connect.js';
import {
  createWorker,
  defineJob,
  silentLogger,
  type WorkerOptions,
  enqueueJobs,
  enqueueWorkflowRun,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  TerminalError,
  workflow,
  type Worker,
  type WorkerOperation,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { refuseConnections } from '../harness/database-outage.js';
import { startFaultProxy, type FaultProxy } from '../harness/fault-proxy.js';
import { countdown, latch, within } from '../fixtures/worker-support/latches.js';

const db = useTestDatabase();

/** Runs of each job's handler, and a gate every handler waits at after counting itself. */
function gatedHandlers(prefix: string) {
  const runs = new Map<string, number>();
  const gate = latch();
  const count = (jobId: string) => runs.set(jobId, (runs.get(jobId) ?? 0) + 1);
  const succeed = defineJob(`${prefix}.ok`, z.object({ n: z.number() }), async (payload, ctx) => {
    count(ctx.jobId);
    await gate.promise;
    return { n: payload.n };
  });
  const fail = defineJob(`${prefix}.fail`, z.object({}), async (_payload, ctx) => {
    count(ctx.jobId);
    await gate.promise;
    throw new TerminalError('declined on purpose', { code: 'outage.declined' });
  });
  const step = defineJob(`${prefix}.step`, z.object({}), async (_payload, ctx) => {
    count(ctx.jobId);
    await gate.promise;
    return 'step done';
  });
  return { runs, gate, handlers: [succeed, fail, step] };
}

/** Records what must not happen: a write given up on, a lease reported lost. */
function watchTrouble(worker: Worker): { errors: WorkerOperation[]; leaseLost: string[] } {
  const trouble = { errors: [] as WorkerOperation[], leaseLost: [] as string[] };
  worker.on('worker:error', (e) => {
    if (e.operation !== 'claim') trouble.errors.push(e.operation);
  });
  worker.on('job:lease_lost', (e) => trouble.leaseLost.push(e.job.jobId));
  return trouble;
}

/** A worker whose Prisma client reaches PostgreSQL through a fault proxy; stopped before its client and proxy are closed. */
async function withProxiedWorker<T>(
  options: Omit<WorkerOptions, 'db'> & { poolSize: number; before: (worker: Worker) => void },
  fn: (proxy: FaultProxy, worker: Worker) => Promise<T>,
): Promise<T> {
  const { poolSize, before, ...workerOptions } = options;
  const proxy = await startFaultProxy(db.url);
  const client = createPrismaClient(proxy.url, { max: poolSize });
  let worker: Worker | undefined;
  try {
    // No reaper, scheduler, intent promoter or registry loop: their statements would compete with the ones under test for the proxied pool.
    worker = createWorker({
      logger: silentLogger,
      reaper: false,
      schedules: false,
      intents: false,
      workerRegistry: false,
      listen: false,
      ...workerOptions,
      db: client,
    });
    before(worker); // listeners attached before anything can happen
    await worker.start();
    return await fn(proxy, worker);
  } finally {
    await proxy.restore();
    await worker?.stop({ drainMs: 0 });
    await client.$disconnect();
    await proxy.close();
  }
}

/** Waits (bounded, polling the condition) until every job in `jobIds` is SUCCEEDED. */
async function untilSucceeded(jobIds: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_queue WHERE id = ANY(${jobIds}::uuid[]) AND status = 'SUCCEEDED'`;
    if (row!.n === jobIds.length) return;
    if (Date.now() > deadline) throw new Error(`only ${row!.n} of ${jobIds.length} jobs succeeded within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a worker through a database outage', () => {
  it('runs every job exactly once when the network is cut for 8 s (the outage of issue 9) while its handlers finish', async () => {
    const { runs, gate, handlers } = gatedHandlers('outage');
    const direct = await enqueueJobs(
      db.prisma,
      Array.from({ length: 20 }, (_, n) => ({ jobType: 'outage.ok', payload: { n } })),
    );
    const failing = await enqueueJobs(
      db.prisma,
      Array.from({ length: 4 }, () => ({ jobType: 'outage.fail', payload: {} })),
    );
    const runIds: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const flow = workflow('outage.flow').job('a', 'outage.step', {}).job('b', 'outage.step', {}).afterSuccess('b', ['a']).resultStep('b').build();
      runIds.push((await enqueueWorkflowRun(db.prisma, flow)).workflowRunId);
    }
    const started = countdown(20 + 4 + 2);
    const finished = countdown(20 + 4 + 2 * 2);
    let trouble!: ReturnType<typeof watchTrouble>;
    const before = (worker: Worker) => {
      trouble = watchTrouble(worker);
      worker.on('job:start', () => started.arrive());
      worker.on('job:success', () => finished.arrive());
      worker.on('job:failure', () => finished.arrive());
    };
    await withProxiedWorker({ handlers, concurrency: 32, leaseSeconds: 30, pollIntervalMs: 50, poolSize: 4, before }, async (proxy) => {
      await within(started.promise, 15_000, 'all 26 first jobs started');
      await proxy.cut();
      gate.open(); // every handler returns now, while nothing can be recorded
      // The outage itself (seconds, as in a server restart); writes keep retrying meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      const leased = await Promise.all([...direct, ...failing].map(({ jobId }) => getJob(db.prisma, { scope: noOrganizationScope(), jobId })));
      expect(leased.every((job) => job.status === 'LEASED')).toBe(true); // nothing got through: the outage was real
      await proxy.restore();
      await within(finished.promise, 20_000, 'every outcome recorded after the outage');
    });
    expect(trouble).toEqual({ errors: [], leaseLost: [] });
    for (const { jobId } of direct) expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
    for (const { jobId } of failing) {
      expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
        status: 'DEAD_LETTERED',
        attempt: 1,
        lastErrorCode: 'outage.declined',
      });
    }
    for (const runId of runIds)
      expect(await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId: runId })).toMatchObject({
        status: 'SUCCEEDED',
        result: 'step done',
      });
    expect(runs.size).toBe(20 + 4 + 2 * 2);
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
  });

  it('runs every job exactly once through two outages of the database itself (ALLOW_CONNECTIONS false, sessions terminated), each shorter than the lease', async () => {
    // Issue 21: new sessions are refused with SQLSTATE 55000 and running ones end with 57P01. Before 55000
    // was a connection fault, the completions met during the outage were dropped ("the lease will expire"),
    // the reaper handed the jobs out again after the lease, and they ran twice.
    const runs = new Map<string, number>();
    let gate = latch();
    const handler = defineJob('refused.ok', z.object({ n: z.number() }), async (payload, ctx) => {
      runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
      await gate.promise;
      return payload.n;
    });
    const perRound = 24;
    let started = countdown(perRound);
    const leaseLost: string[] = [];
    const client = db.newClient({ max: 4 });
    const worker = createWorker({
      db: client,
      handlers: [handler],
      logger: silentLogger,
      concurrency: perRound,
      leaseSeconds: 6,
      pollIntervalMs: 50,
      // The reaper is what re-runs a job whose completion was dropped: it must run, and soon after a lease expires.
      reaper: { intervalMs: 500, limit: 100 },
      schedules: false,
      intents: false,
      listen: false,
    });
    worker.on('job:start', () => started.arrive());
    worker.on('job:lease_lost', (e) => leaseLost.push(e.job.jobId));
    await worker.start();
    const jobIds: string[] = [];
    try {
      for (let round = 0; round < 2; round += 1) {
        const jobs = await enqueueJobs(
          db.prisma,
          Array.from({ length: perRound }, (_, n) => ({ jobType: 'refused.ok', payload: { n } })),
        );
        jobIds.push(...jobs.map((job) => job.jobId));
        await within(started.promise, 20_000, `round ${round}: all ${perRound} jobs started`);
        const outage = await refuseConnections(db.name, { terminate: true });
        try {
          gate.open(); // every handler returns now, while no session can be had
          await new Promise((resolve) => setTimeout(resolve, 2_500)); // an outage well inside the 6 s lease
        } finally {
          await outage.end();
        }
        await untilSucceeded(
          jobs.map((job) => job.jobId),
          30_000,
        );
        gate = latch();
        started = countdown(perRound);
      }
    } finally {
      await worker.stop({ drainMs: 0 });
    }
    const counts = jobIds.map((jobId) => runs.get(jobId) ?? 0);
    expect({ duplicates: counts.filter((count) => count > 1).length, missing: counts.filter((count) => count === 0).length }).toEqual({
      duplicates: 0,
      missing: 0,
    });
    expect(leaseLost).toEqual([]);
    const attempts = await db.prisma.$queryRaw<{ attempt: number; n: number }[]>`
      SELECT attempt, count(*)::int AS n FROM runledger.job_queue WHERE id = ANY(${jobIds}::uuid[]) GROUP BY attempt`;
    expect(attempts).toEqual([{ attempt: 1, n: 2 * perRound }]);
  });

  it('reports a completion whose commit reached PostgreSQL but whose answer was lost as a success', async () => {
    const { runs, gate, handlers } = gatedHandlers('lost');
    const jobs = await enqueueJobs(
      db.prisma,
      Array.from({ length: 3 }, (_, n) => ({ jobType: 'lost.ok', payload: { n } })),
    );
    const started = countdown(3);
    const succeeded = countdown(3);
    let trouble!: ReturnType<typeof watchTrouble>;
    const before = (worker: Worker) => {
      trouble = watchTrouble(worker);
      worker.on('job:start', () => started.arrive());
      worker.on('job:success', () => succeeded.arrive());
    };
    // One pooled connection, warmed by the claim, and no polling after it: the completion is the only statement
    // in flight when the answers start being dropped (a new connection's handshake would hang instead).
    const options = { handlers, concurrency: 4, leaseSeconds: 30, pollIntervalMs: 60_000, completionBatchMs: 0, poolSize: 1, before };
    await withProxiedWorker(options, async (proxy) => {
      await within(started.promise, 15_000, 'all 3 jobs started');
      proxy.swallowResponses();
      gate.open();
      // Until the completions have committed (their answers go nowhere).
      const deadline = Date.now() + 15_000;
      while (
        (await Promise.all(jobs.map(({ jobId }) => getJob(db.prisma, { scope: noOrganizationScope(), jobId })))).some((job) => job.status !== 'SUCCEEDED')
      ) {
        if (Date.now() > deadline) throw new Error('the completions never committed');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await proxy.cut(); // the client learns its connection is gone and retries
      await proxy.restore();
      await within(succeeded.promise, 15_000, 'the 3 successes reported');
    });
    expect(trouble).toEqual({ errors: [], leaseLost: [] });
    expect([...runs.values()]).toEqual([1, 1, 1]);
    for (const { jobId } of jobs) expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
  });
});
