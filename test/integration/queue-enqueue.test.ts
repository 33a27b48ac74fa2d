import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  JOB_AVAILABLE_CHANNEL,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  enqueueWorkflowRuns,
  getJob,
  noOrganizationScope,
  organizationScope,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const ORG = '0190a3e0-0000-7000-8000-000000000001';

/** Collects notifications on the job channel; `until(marker)` resolves once `marker` arrives. */
async function listen(pool: pg.Pool) {
  const client = await pool.connect();
  const received: string[] = [];
  const waiters = new Map<string, () => void>();
  client.on('notification', (message) => {
    received.push(message.payload ?? '');
    waiters.get(message.payload ?? '')?.();
  });
  await client.query(`LISTEN ${JOB_AVAILABLE_CHANNEL}`);
  return {
    received,
    /** Notifications are delivered in commit order: once the marker arrives, every earlier commit's have too. */
    async until(marker: string): Promise<void> {
      const arrived = new Promise<void>((resolve) => waiters.set(marker, resolve));
      await pool.query('SELECT pg_notify($1, $2)', [JOB_AVAILABLE_CHANNEL, marker]);
      await arrived;
    },
    release: () => client.release(),
  };
}

describe('enqueueJob', () => {
  it('inserts a pending job with the defaults and an ENQUEUED event', async () => {
    const result = await enqueueJob(db.prisma, { jobType: 'email.send', payload: { to: 'a@example.com' } });
    expect(result).toMatchObject({ status: 'PENDING', runNumber: 1, disposition: 'inserted' });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: result.jobId });
    expect(job).toMatchObject({
      jobType: 'email.send',
      organizationId: null,
      payload: { to: 'a@example.com' },
      status: 'PENDING',
      priority: 0,
      attempt: 0,
      maxAttempts: 5,
      runNumber: 1,
      timeoutSeconds: 300,
      leaseOwner: null,
      idempotencyKey: null,
      finishedAt: null,
    });
    const events = await db.prisma.$queryRaw<{ event_type: string; run_number: number; attempt: number }[]>`
      SELECT event_type, run_number, attempt FROM runledger.job_trail WHERE job_id = ${result.jobId}::uuid`;
    expect(events).toEqual([{ event_type: 'ENQUEUED', run_number: 1, attempt: 0 }]);
  });

  it('stores the given priority, attempts, timeout and organization', async () => {
    const { jobId } = await enqueueJob(db.prisma, {
      jobType: 'report.build',
      payload: [1, 'two', null],
      organizationId: ORG,
      priority: -7,
      maxAttempts: 1,
      timeoutSeconds: 30,
    });
    const job = await getJob(db.prisma, { scope: organizationScope(ORG), jobId });
    expect(job).toMatchObject({ organizationId: ORG, payload: [1, 'two', null], priority: -7, maxAttempts: 1, timeoutSeconds: 30 });
  });

  it('keeps a JSON null payload as JSON', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'noop', payload: null });
    const [row] = await db.prisma.$queryRaw<{ kind: string }[]>`
      SELECT jsonb_typeof(payload) AS kind FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(row?.kind).toBe('null');
  });

  it('schedules at runAt', async () => {
    const runAt = new Date(Date.UTC(2030, 0, 1, 12, 0, 0));
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'later', payload: {}, runAt });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).nextRunAt).toEqual(runAt);
  });

  it('schedules delayMs after the database clock', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'later', payload: {}, delayMs: 90_000 });
    const [row] = await db.prisma.$queryRaw<{ delay_ms: number }[]>`
      SELECT (EXTRACT(EPOCH FROM next_run_at - created_at) * 1000)::int AS delay_ms
        FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(row?.delay_ms).toBe(90_000);
  });
});

describe('enqueueJobs', () => {
  it('inserts a batch and answers in input order', async () => {
    const results = await enqueueJobs(
      db.prisma,
      Array.from({ length: 20 }, (_, i) => ({ jobType: 'batch.item', payload: { i }, priority: i % 3 })),
    );
    expect(results).toHaveLength(20);
    expect(new Set(results.map((r) => r.jobId)).size).toBe(20);
    const rows = await db.prisma.$queryRaw<{ id: string; i: number; events: number }[]>`
      SELECT jq.id, (jq.payload->>'i')::int AS i,
             (SELECT count(*)::int FROM runledger.job_trail e WHERE e.job_id = jq.id AND e.event_type = 'ENQUEUED') AS events
        FROM runledger.job_queue jq WHERE jq.job_type = 'batch.item'`;
    const byId = new Map(rows.map((row) => [row.id, row]));
    results.forEach((result, i) => {
      expect(byId.get(result.jobId)).toEqual({ id: result.jobId, i, events: 1 });
    });
  });

  it('returns an empty answer for an empty batch', async () => {
    expect(await enqueueJobs(db.prisma, [])).toEqual([]);
  });

  it('announces each job type that became runnable once, at commit', async () => {
    const listener = await listen(db.newPool({ max: 2 }));
    try {
      await enqueueJobs(db.prisma, [
        { jobType: 'notify.a', payload: 1 },
        { jobType: 'notify.a', payload: 2 },
        { jobType: 'notify.b', payload: 3 },
        { jobType: 'notify.delayed', payload: 4, delayMs: 60_000 },
      ]);
      await listener.until('marker-1');
      expect(listener.received.sort()).toEqual(['marker-1', 'notify.a', 'notify.b']);
    } finally {
      listener.release();
    }
  });

  it('sends one notification per distinct runnable job type for a whole statement', async () => {
    const listener = await listen(db.newPool({ max: 2 }));
    try {
      await enqueueJobs(
        db.prisma,
        Array.from({ length: 100 }, (_, i) => ({ jobType: i % 2 === 0 ? 'coalesce.a' : 'coalesce.b', payload: i })),
      );
      await listener.until('marker-coalesced');
      expect(listener.received.sort()).toEqual(['coalesce.a', 'coalesce.b', 'marker-coalesced']);
    } finally {
      listener.release();
    }
  });

  it('starts workflow runs without a notification with notify: false, and notifies by default', async () => {
    const listener = await listen(db.newPool({ max: 2 }));
    try {
      const quiet = await enqueueWorkflowRun(db.prisma, workflow('quiet.flow').job('a', 'quiet.wf', {}).build(), { notify: false });
      const batch = await enqueueWorkflowRuns(db.prisma, [workflow('quiet.flow').job('a', 'quiet.wfb', {}).build()], { notify: false });
      await listener.until('marker-wf-quiet');
      expect(listener.received).toEqual(['marker-wf-quiet']);
      await enqueueWorkflowRun(db.prisma, workflow('loud.flow').job('a', 'loud.wf', {}).build());
      await listener.until('marker-wf-loud');
      expect(listener.received).toEqual(['marker-wf-quiet', 'loud.wf', 'marker-wf-loud']);
      expect([quiet.disposition, batch[0]!.disposition]).toEqual(['inserted', 'inserted']);
      const error = await enqueueWorkflowRun(db.prisma, workflow('quiet.flow').job('a', 'quiet.wf', {}).build(), { notify: 'no' } as never).catch(
        (e: unknown) => e,
      );
      expect((error as { field?: string }).field).toBe('notify');
    } finally {
      listener.release();
    }
  });

  it('sends no notification with notify: false, and still enqueues', async () => {
    const listener = await listen(db.newPool({ max: 2 }));
    try {
      const batch = await enqueueJobs(
        db.prisma,
        Array.from({ length: 10 }, (_, i) => ({ jobType: 'quiet.batch', payload: i })),
        { notify: false },
      );
      const single = await enqueueJob(db.prisma, { jobType: 'quiet.single', payload: {} }, { notify: false });
      // The keyed path (its own transaction) takes the option too.
      const keyed = await enqueueJob(db.prisma, { jobType: 'quiet.keyed', payload: {}, idempotencyKey: 'quiet-1' }, { notify: false });
      // And inside a caller's transaction.
      await db.prisma.$transaction(async (tx) => {
        await enqueueJob(tx, { jobType: 'quiet.tx', payload: {} }, { notify: false });
      });
      // The marker is sent after every enqueue above committed: delivered in commit order, anything they sent precedes it.
      await listener.until('marker-quiet');
      expect(listener.received).toEqual(['marker-quiet']);
      expect(batch).toHaveLength(10);
      for (const { jobId } of [...batch, single, keyed]) {
        expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status).toBe('PENDING');
      }
    } finally {
      listener.release();
    }
  });

  it('refuses unknown or mistyped enqueue options before writing', async () => {
    await expect(enqueueJob(db.prisma, { jobType: 'opts.bad', payload: {} }, { notify: 'no' } as never)).rejects.toMatchObject({
      code: 'job.invalid_input',
    });
    await expect(enqueueJobs(db.prisma, [{ jobType: 'opts.bad', payload: {} }], { notfy: false } as never)).rejects.toMatchObject({
      code: 'job.invalid_input',
    });
    const rows = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = 'opts.bad'`;
    expect(rows[0]!.n).toBe(0);
  });

  it('announces nothing when the enqueuing transaction rolls back', async () => {
    const listener = await listen(db.newPool({ max: 2 }));
    try {
      await expect(
        db.prisma.$transaction(async (tx) => {
          await enqueueJob(tx, { jobType: 'notify.rolled_back', payload: {} });
          throw new Error('business failure');
        }),
      ).rejects.toThrow('business failure');
      await enqueueJob(db.prisma, { jobType: 'notify.committed', payload: {} });
      await listener.until('marker-2');
      expect(listener.received).toEqual(['notify.committed', 'marker-2']);
    } finally {
      listener.release();
    }
  });
});
