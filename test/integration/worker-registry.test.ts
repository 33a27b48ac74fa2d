/**
 * The worker registry (src/worker/registry.ts) and the stack a failed
 * attempt keeps: a started worker has a row (types, concurrency, host, pid),
 * it is gone once the worker stops, a heartbeat deletes rows expired for over
 * an hour and keeps younger ones; a handler's throw leaves its stack on the
 * attempt, cut to the bound, and a throw without one leaves none.
 */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, noOrganizationScope, TerminalError } from '../../src/index.js';
import { jobDetail } from '../../src/dashboard/api.js';
import { MAX_ERROR_STACK_LENGTH } from '../../src/job/defaults.js';
import { defineJob } from '../../src/worker/index.js';
import { heartbeatWorkerRegistration } from '../../src/worker/registry.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

interface RegistryRow {
  id: string;
  host: string;
  pid: number;
  job_types: string[];
  concurrency: number;
  in_flight: number;
  live: boolean;
}

async function registry(): Promise<RegistryRow[]> {
  return db.prisma.$queryRaw<
    RegistryRow[]
  >`SELECT id, host, pid, job_types, concurrency, in_flight, expires_at > now() AS live FROM runledger.workers ORDER BY id`;
}

async function attemptsOf(jobId: string): Promise<{ error_code: string | null; error_stack: string | null }[]> {
  return db.prisma.$queryRaw`SELECT error_code, error_stack FROM runledger.job_attempts WHERE job_id = ${jobId}::uuid ORDER BY seq`;
}

async function settled(jobId: string, statuses: string[]): Promise<void> {
  for (let round = 0; round < 400; round += 1) {
    const [row] = await db.prisma.$queryRaw<{ status: string }[]>`SELECT status::text FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    if (statuses.includes(row!.status)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`job ${jobId} did not settle`);
}

describe('worker registry', () => {
  it('registers a started worker with its types and concurrency, and removes it at stop', async () => {
    const handler = defineJob('registry.noop', z.object({}), async () => null);
    const other = defineJob('registry.other', z.object({}), async () => null);
    const worker = await startWorker({ handlers: [handler, other], concurrency: 3, workerId: 'registry-worker-1' });
    // The first heartbeat runs at start, in the background.
    for (let round = 0; round < 200 && (await registry()).length === 0; round += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await registry()).toEqual([
      { id: 'registry-worker-1', host: hostname(), pid: process.pid, job_types: ['registry.noop', 'registry.other'], concurrency: 3, in_flight: 0, live: true },
    ]);
    await worker.stop();
    expect(await registry()).toEqual([]);
  });

  it('deletes rows expired for over an hour at the next heartbeat, keeping younger departures', async () => {
    await db.prisma.$executeRaw`
      INSERT INTO runledger.workers (id, host, pid, job_types, concurrency, in_flight, started_at, last_seen_at, expires_at)
      VALUES ('long-gone', 'h', 1, '{a}', 1, 0, now() - interval '3 hours', now() - interval '2 hours', now() - interval '61 minutes'),
             ('just-gone', 'h', 2, '{a}', 1, 0, now() - interval '3 hours', now() - interval '10 minutes', now() - interval '5 minutes')`;
    await heartbeatWorkerRegistration(db.prisma, { workerId: 'beating', jobTypes: ['a'], concurrency: 2, inFlight: 1, ttlMs: 45_000 });
    expect((await registry()).map((row) => [row.id, row.live])).toEqual([
      ['beating', true],
      ['just-gone', false],
    ]);
    await db.prisma.$executeRaw`DELETE FROM runledger.workers`;
  });
});

describe('failed attempt stacks', () => {
  it("keeps the handler's stack with the attempt, and none for a throw without one", async () => {
    function failingDeepInsideTheHandler(): never {
      throw new TerminalError('the card was declined', { code: 'billing.declined' });
    }
    const failing = defineJob('stack.fails', z.object({ kind: z.string() }), async ({ kind }) => {
      if (kind === 'error') failingDeepInsideTheHandler();
      if (kind === 'long') {
        const error = new Error('long stack');
        error.stack = `Error: long stack\n${'    at frame (file.js:1:1)\n'.repeat(2_000)}`;
        throw error;
      }
      // A thrown string has no stack.
      throw 'plain string';
    });
    await startWorker({ handlers: [failing] });
    const error = await enqueueJob(db.prisma, { jobType: 'stack.fails', payload: { kind: 'error' }, maxAttempts: 1 });
    const long = await enqueueJob(db.prisma, { jobType: 'stack.fails', payload: { kind: 'long' }, maxAttempts: 1 });
    const plain = await enqueueJob(db.prisma, { jobType: 'stack.fails', payload: { kind: 'plain' }, maxAttempts: 1 });
    for (const { jobId } of [error, long, plain]) await settled(jobId, ['DEAD_LETTERED']);

    const [declined] = await attemptsOf(error.jobId);
    expect(declined!.error_code).toBe('billing.declined');
    expect(declined!.error_stack).toMatch(/the card was declined\n\s+at failingDeepInsideTheHandler/);
    const [cut] = await attemptsOf(long.jobId);
    expect(cut!.error_stack).toHaveLength(MAX_ERROR_STACK_LENGTH);
    expect(cut!.error_stack!.startsWith('Error: long stack\n')).toBe(true);
    const [none] = await attemptsOf(plain.jobId);
    expect(none).toMatchObject({ error_code: 'job.handler_error', error_stack: null });
    // The dashboard's job detail folds each stored stack under its attempt, and adds none where there is none.
    const shown = await jobDetail(db.prisma, noOrganizationScope(), error.jobId);
    expect((shown.attempts[0] as { stack?: string }).stack).toBe(declined!.error_stack);
    expect('stack' in (await jobDetail(db.prisma, noOrganizationScope(), plain.jobId)).attempts[0]!).toBe(false);
  });
});
