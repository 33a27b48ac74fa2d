/**
 * The crash probe of transactional handlers: 2,000 jobs, each inserting one
 * host row through `ctx.tx`, run by a worker process that is SIGKILLed
 * mid-run while the database connections of the workers are terminated over
 * and over. However the attempts were cut, every job ends SUCCEEDED once and
 * exactly one host row exists per job (the rows have random ids: no key but
 * the transaction keeps a second one out).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { enqueueJobs } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const fixture = fileURLToPath(new URL('../fixtures/transactional-crash/worker.ts', import.meta.url));
const JOBS = 2_000;
const APP = 'txcrash-worker';

function workerUrl(): string {
  return `${db.url}${db.url.includes('?') ? '&' : '?'}application_name=${APP}`;
}

/** Starts a worker process and resolves once it is running. */
async function spawnWorker(workerId: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, workerUrl(), workerId], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  await new Promise<void>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line === 'ready') resolve();
    });
    child.once('exit', () => reject(new Error(`worker ${workerId} exited before it was ready`)));
  });
  return child;
}

async function stopped(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await exited;
}

describe('transactional handlers under crashes and terminated connections', () => {
  it('leaves exactly one host row per job, and every job SUCCEEDED once', { timeout: 240_000 }, async () => {
    const admin = db.newPool({ max: 2 });
    await admin.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
    const jobIds = (
      await enqueueJobs(
        db.prisma,
        Array.from({ length: JOBS }, () => ({ jobType: 'txcrash.order', payload: {}, maxAttempts: 50, backoff: { baseDelayMs: 50, maxDelayMs: 500 } })),
      )
    ).map((job) => job.jobId);
    const succeeded = async () =>
      Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM runledger.job_queue WHERE status = 'SUCCEEDED'`)).rows[0]!.n);
    const waitFor = async (predicate: () => Promise<boolean>, what: string, timeoutMs = 180_000) => {
      const until = Date.now() + timeoutMs;
      while (!(await predicate())) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const terminate = async () =>
      Number(
        (
          await admin.query<{ n: string }>(
            `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
            [APP],
          )
        ).rows[0]!.n,
      );

    const children: ChildProcess[] = [];
    try {
      const doomed = await spawnWorker('txcrash-doomed');
      children.push(doomed);
      let terminated = 0;
      await waitFor(async () => (await succeeded()) >= 300, '300 successes');
      terminated += await terminate();
      await waitFor(async () => (await succeeded()) >= 600, '600 successes');
      terminated += await terminate();
      await waitFor(async () => (await succeeded()) >= 800, '800 successes');
      await stopped(doomed, 'SIGKILL');
      // Killed mid-run: attempts of the dead worker were open (their leases now expire and the reaper returns them).
      const orphaned = Number(
        (await admin.query<{ n: string }>(`SELECT count(*) AS n FROM runledger.job_queue WHERE status = 'LEASED' AND lease_owner = 'txcrash-doomed'`)).rows[0]!
          .n,
      );
      expect(orphaned).toBeGreaterThan(0);

      const survivor = await spawnWorker('txcrash-survivor');
      children.push(survivor);
      for (const target of [1_100, 1_400, 1_700]) {
        await waitFor(async () => (await succeeded()) >= target, `${target} successes`);
        terminated += await terminate();
      }
      expect(terminated).toBeGreaterThan(0);
      await waitFor(async () => (await succeeded()) === JOBS, 'every job to succeed');
    } finally {
      for (const child of children) await stopped(child, 'SIGKILL');
    }

    const { rows: perJob } = await admin.query<{ rows: string; jobs: string }>(
      `
      SELECT per.rows::text, count(*)::text AS jobs
        FROM (SELECT j.id, (SELECT count(*) FROM public.host_orders o WHERE o.customer = j.id::text) AS rows
                FROM runledger.job_queue j WHERE j.id = ANY($1::uuid[])) per
       GROUP BY per.rows`,
      [jobIds],
    );
    // Exactly one host row per job: no job without its row, none with two.
    expect(perJob).toEqual([{ rows: '1', jobs: String(JOBS) }]);
    const { rows: outcomes } = await admin.query<{ status: string; succeeded_events: string; jobs: string }>(
      `
      SELECT per.status, per.succeeded_events::text, count(*)::text AS jobs
        FROM (SELECT j.status::text AS status,
                     (SELECT count(*) FROM runledger.job_trail t WHERE t.job_id = j.id AND t.event_type = 'SUCCEEDED') AS succeeded_events
                FROM runledger.job_queue j WHERE j.id = ANY($1::uuid[])) per
       GROUP BY 1, 2`,
      [jobIds],
    );
    expect(outcomes).toEqual([{ status: 'SUCCEEDED', succeeded_events: '1', jobs: String(JOBS) }]);
    // The faults cut attempts short: some jobs needed more than one (their rolled-back writes left nothing).
    const { rows: retried } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM runledger.job_queue WHERE id = ANY($1::uuid[]) AND attempt > 1`, [
      jobIds,
    ]);
    expect(Number(retried[0]!.n)).toBeGreaterThan(0);
    // The rows came from the attempts that succeeded: each row's attempt is its job's final attempt.
    const { rows: mismatched } = await admin.query<{ n: string }>(`
      SELECT count(*) AS n FROM public.host_orders o JOIN runledger.job_queue j ON o.customer = j.id::text WHERE o.total <> j.attempt`);
    expect(mismatched[0]!.n).toBe('0');
  });
});
