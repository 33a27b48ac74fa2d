import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, getJob, noOrganizationScope } from '../../src/index.js';
import { createWorker, defineJob, silentLogger } from '../../src/worker/index.js';
import { nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const fixture = fileURLToPath(new URL('../fixtures/worker-crash/hanging-worker.ts', import.meta.url));

describe('a worker process killed mid-job', () => {
  it('leaves a lease that expires, and another worker completes the job', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, db.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    const lines = createInterface({ input: child.stdout! });
    const started = new Promise<string>((resolve, reject) => {
      lines.on('line', (line) => {
        if (line.startsWith('started ')) resolve(line.split(' ')[1]!);
      });
      child.once('exit', () => reject(new Error('the child worker exited before starting the job')));
    });
    try {
      const { jobId } = await enqueueJob(db.prisma, { jobType: 'crash.victim', payload: {} });
      expect(await started).toBe(jobId);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'LEASED', leaseOwner: 'doomed-worker', attempt: 1 });

      const survivor = defineJob('crash.victim', z.object({}), async (_payload, ctx) => `recovered on attempt ${ctx.attempt}`);
      const worker = createWorker({
        db: db.prisma,
        handlers: [survivor],
        listen: false,
        pollIntervalMs: 100,
        reaper: { intervalMs: 200 },
        logger: silentLogger,
      });
      const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobId === jobId, 20_000);
      await worker.start();
      try {
        expect((await succeeded).job.attempt).toBe(2);
      } finally {
        await worker.stop();
      }
      expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
        status: 'SUCCEEDED',
        attempt: 2,
        output: 'recovered on attempt 2',
        lastErrorCode: 'job.lease_expired',
      });
    } finally {
      lines.close();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
