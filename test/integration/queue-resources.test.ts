/**
 * Execution resources (src/queue/claim.ts header, the execution_resources
 * migration): at most one LEASED job per resource key, oldest first within a
 * key, blocked jobs untouched at attempt 0, and every way a lease ends
 * releases the key (a canceled lease only once it has quiesced).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  appendWorkflowSteps,
  cancelJob,
  claimJobs,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  failJob,
  getJob,
  noOrganizationScope,
  heartbeatJob,
  isRunledgerError,
  reapExpiredLeases,
  releaseJob,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { isResourceClaimRace } from '../../src/queue/claim.js';
import { defineJob } from '../../src/worker/index.js';
import { countdown, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

let typeCounter = 0;
/** A job type of this test alone, so tests sharing the database never claim each other's jobs. */
const freshType = (): string => {
  typeCounter += 1;
  return `res.t${typeCounter}`;
};

async function claim(jobType: string, limit = 10, leaseSeconds = 60): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds, markRunning: true });
}

async function jobCount(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
  return row!.n;
}

describe('execution resources', () => {
  it('refuses a blank or oversized resource key, naming the field, and writes nothing', async () => {
    const before = await jobCount();
    for (const resource of ['', '   ', 'x'.repeat(513), 'é'.repeat(257)]) {
      const error = await enqueueJob(db.prisma, { jobType: 'res.invalid', payload: {}, resource }).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'job.invalid_input')).toBe(true);
      expect((error as { field?: string }).field).toBe('resource');
    }
    const batch = await enqueueJobs(db.prisma, [
      { jobType: 'res.invalid', payload: {} },
      { jobType: 'res.invalid', payload: {}, resource: '' },
    ]).catch((e: unknown) => e);
    expect((batch as { field?: string }).field).toBe('1.resource');
    expect(await jobCount()).toBe(before);
    // 512 bytes exactly is accepted, and stored as given.
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'res.invalid', payload: {}, resource: 'k'.repeat(512) });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).resourceKey).toBe('k'.repeat(512));
  });

  it('leases one job per key per claim, oldest first, and leaves the others PENDING at attempt 0', async () => {
    const type = freshType();
    const enqueued = await enqueueJobs(db.prisma, [
      { jobType: type, payload: { n: 1 }, resource: 'acct-1' },
      { jobType: type, payload: { n: 2 }, resource: 'acct-1' },
      { jobType: type, payload: { n: 3 }, resource: 'acct-2' },
      { jobType: type, payload: { n: 4 } },
      { jobType: type, payload: { n: 5 } },
      { jobType: type, payload: { n: 6 }, resource: 'acct-1' },
    ]);
    const first = await claim(type);
    expect(first.map((j) => (j.payload as { n: number }).n).sort()).toEqual([1, 3, 4, 5]);
    const blocked = await Promise.all([1, 5].map((i) => getJob(db.prisma, { scope: noOrganizationScope(), jobId: enqueued[i]!.jobId })));
    expect(blocked.map((j) => [j.status, j.attempt])).toEqual([
      ['PENDING', 0],
      ['PENDING', 0],
    ]);
    // Held: a second claim gets nothing while acct-1 and acct-2 are leased.
    expect(await claim(type)).toEqual([]);
    await completeJobs(
      db.prisma,
      first.map((lease) => ({ ...lease })),
    );
    const second = await claim(type);
    expect(second.map((j) => (j.payload as { n: number }).n)).toEqual([2]);
    await completeJobs(
      db.prisma,
      second.map((lease) => ({ ...lease })),
    );
    expect((await claim(type)).map((j) => (j.payload as { n: number }).n)).toEqual([6]);
  });

  it('holds the key across a heartbeat and releases it on failure, release and reaping', async () => {
    const type = freshType();
    await enqueueJobs(
      db.prisma,
      [1, 2, 3, 4].map((n) => ({ jobType: type, payload: { n }, resource: 'shared', maxAttempts: 5 })),
    );
    const [a] = await claim(type);
    await heartbeatJob(db.prisma, { ...a!, leaseSeconds: 120 });
    expect(await claim(type)).toEqual([]);

    // A retryable failure with a backoff: the key is free at once, and the next job (now the due head) runs.
    await failJob(db.prisma, { ...a!, error: { code: 'x.fail', message: 'boom' }, retryable: true, retryNotBefore: new Date(Date.now() + 3_600_000) });
    const [b] = await claim(type);
    expect((b!.payload as { n: number }).n).toBe(2);

    // Released: the key is free again; the head is now the oldest due job (3: released b is due from now on).
    await releaseJob(db.prisma, { ...b! });
    const [c] = await claim(type);
    expect((c!.payload as { n: number }).n).toBe(3);

    // Reaped: its lease expired (moved into the past directly; the reaper compares with the clock).
    await expireLeases(db.prisma, c!.jobId);
    expect((await reapExpiredLeases(db.prisma, { limit: 100 })).retried).toContain(c!.jobId);
    const [d] = await claim(type);
    expect((d!.payload as { n: number }).n).toBe(4);
    expect(await claim(type)).toEqual([]);
  });

  it('keeps a canceled job’s key until its lease has quiesced', async () => {
    const type = freshType();
    await enqueueJobs(
      db.prisma,
      [1, 2].map((n) => ({ jobType: type, payload: { n }, resource: 'quiesce' })),
    );
    const [a] = await claim(type);
    await cancelJob(db.prisma, { jobId: a!.jobId, scope: noOrganizationScope() });
    // The canceled handler may still be running until its lease ends: the next job must wait.
    expect(await claim(type)).toEqual([]);
    await expireLeases(db.prisma, a!.jobId);
    const [b] = await claim(type);
    expect((b!.payload as { n: number }).n).toBe(2);
  });

  it('spans job types and organizations: one key, one lease', async () => {
    const [t1, t2] = [freshType(), freshType()];
    const org = '0195f7a4-1c2d-7000-8000-00000000abcd';
    await enqueueJob(db.prisma, { jobType: t1, payload: {}, resource: 'provider-account' });
    await enqueueJob(db.prisma, { jobType: t2, payload: {}, resource: 'provider-account', organizationId: org });
    const both = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [t1, t2], limit: 10, leaseSeconds: 60 });
    expect(both).toHaveLength(1);
    expect(both[0]!.jobType).toBe(t1);
    // An untyped claim honours the key too.
    expect(await claimJobs(db.prisma, { workerId: 'w2', limit: 10, leaseSeconds: 60 }).then((jobs) => jobs.filter((j) => j.jobType === t2))).toEqual([]);
  });

  it('carries a workflow step’s resource to its job, also when the step is released later', async () => {
    const type = freshType();
    await enqueueWorkflowRun(
      db.prisma,
      workflow('res.wf')
        .job('a', type, { k: 'a' }, { resource: 'wf-key' })
        .job('b', type, { k: 'b' }, { resource: 'wf-key' })
        .job('c', type, { k: 'c' }, { resource: 'wf-key' })
        .afterSuccess('c', ['a'])
        .build(),
    );
    const first = await claim(type);
    expect(first).toHaveLength(1);
    await completeJobs(db.prisma, [{ ...first[0]! }]);
    const second = await claim(type);
    expect(second).toHaveLength(1);
    await completeJobs(db.prisma, [{ ...second[0]! }]);
    const third = await claim(type);
    expect(third).toHaveLength(1);
    expect(new Set([first, second, third].map((jobs) => (jobs[0]!.payload as { k: string }).k))).toEqual(new Set(['a', 'b', 'c']));
    const [row] = await db.prisma.$queryRaw<{ resource_key: string }[]>`SELECT resource_key FROM runledger.job_queue WHERE id = ${third[0]!.jobId}::uuid`;
    expect(row!.resource_key).toBe('wf-key');
  });

  it('carries an appended step’s resource to its job, released at once or later', async () => {
    const type = freshType();
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('res.append').job('a', type, { k: 'a' }, { resource: 'ap-key' }).build());
    await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [
        { kind: 'job', key: 'now', jobType: type, payload: { k: 'now' }, resource: 'ap-key' },
        { kind: 'job', key: 'later', jobType: type, payload: { k: 'later' }, resource: 'ap-key' },
      ],
      edges: [{ prerequisite: 'a', dependent: 'later' }],
    });
    const keys = await db.prisma.$queryRaw<{ step_key: string; step_resource: string | null; job_resource: string | null }[]>`
      SELECT ws.step_key, ws.resource_key AS step_resource, jq.resource_key AS job_resource
        FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid ORDER BY ws.step_key`;
    expect(keys).toEqual([
      { step_key: 'a', step_resource: 'ap-key', job_resource: 'ap-key' },
      { step_key: 'later', step_resource: 'ap-key', job_resource: null },
      { step_key: 'now', step_resource: 'ap-key', job_resource: 'ap-key' },
    ]);
    // a and now share the key: one at a time.
    const first = await claim(type);
    expect(first).toHaveLength(1);
    await completeJobs(db.prisma, [{ ...first[0]! }]);
    const second = await claim(type);
    expect(second).toHaveLength(1);
    expect(second[0]!.resourceKey).toBe('ap-key');
  });

  it('makes the resource part of an idempotent request', async () => {
    const type = freshType();
    await enqueueJob(db.prisma, { jobType: type, payload: {}, idempotencyKey: 'k1', resource: 'r1' });
    const again = await enqueueJob(db.prisma, { jobType: type, payload: {}, idempotencyKey: 'k1', resource: 'r1' });
    expect(again.disposition).toBe('existing');
    const other = await enqueueJob(db.prisma, { jobType: type, payload: {}, idempotencyKey: 'k1', resource: 'r2' }).catch((e: unknown) => e);
    expect(isRunledgerError(other, 'job.idempotency_conflict')).toBe(true);
    const run = (resource: string) => workflow('res.idem').job('a', type, {}, { resource }).idempotencyKey('wk1').build();
    const firstRun = await enqueueWorkflowRun(db.prisma, run('r1'));
    expect(await enqueueWorkflowRun(db.prisma, run('r1'))).toMatchObject({ workflowRunId: firstRun.workflowRunId, disposition: 'existing' });
    const otherRun = await enqueueWorkflowRun(db.prisma, run('r2')).catch((e: unknown) => e);
    expect(isRunledgerError(otherRun, 'workflow.idempotency_conflict')).toBe(true);
  });

  it('is guaranteed by the schema: a second live lease of a key is refused', async () => {
    const type = freshType();
    const jobs = await enqueueJobs(
      db.prisma,
      [1, 2].map((n) => ({ jobType: type, payload: { n }, resource: 'schema-fence' })),
    );
    const error = await db.prisma.$executeRaw`
      INSERT INTO runledger.job_leases (expires_at, job_id, resource_key)
      SELECT now() + interval '1 minute', id, 'schema-fence' FROM unnest(${jobs.map((j) => j.jobId)}::uuid[]) AS t(id)`.catch((e: unknown) => e);
    // What claimJobs retries on: the same violation, recognised through Prisma's error wrapping.
    expect(isResourceClaimRace(error)).toBe(true);
    expect(isResourceClaimRace(new Error('duplicate key value violates unique constraint "job_queue_pkey"'))).toBe(false);
  });

  it('8 workers, 2,000 jobs over 10 keys: never two handlers of one key at once, and all done', async () => {
    const type = freshType();
    const active = new Map<string, number>();
    let overlaps = 0;
    let maxParallelKeys = 0;
    const handler = defineJob(type, z.object({ key: z.string() }), async ({ key }) => {
      const now = (active.get(key) ?? 0) + 1;
      active.set(key, now);
      if (now > 1) overlaps += 1;
      maxParallelKeys = Math.max(maxParallelKeys, [...active.values()].filter((v) => v > 0).length);
      await new Promise((resolve) => setImmediate(resolve));
      active.set(key, active.get(key)! - 1);
    });
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 2_000 }, (_, n) => ({ jobType: type, payload: { key: `key-${n % 10}` }, resource: `key-${n % 10}` })),
      { notify: false },
    );
    const done = countdown(2_000);
    // Each worker on its own client (its own connections), as separate processes would be.
    const workers = await Promise.all(
      // Polling only (no NOTIFY): a key's next job is claimed by the worker whose completion freed the key
      // (it claims again once that outcome is recorded) or by any worker's poll.
      Array.from({ length: 8 }, () =>
        startWorker({ db: db.newClient({ max: 4 }), handlers: [handler], concurrency: 4, pollIntervalMs: 200, completionBatchMs: 0 }),
      ),
    );
    for (const worker of workers) worker.on('job:success', done.arrive);
    await within(done.promise, 120_000, '2,000 successes');
    expect(overlaps).toBe(0);
    expect(maxParallelKeys).toBeGreaterThan(1); // the keys did run side by side
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${type} AND status = 'SUCCEEDED'`;
    expect(row!.n).toBe(2_000);
  }, 180_000);
});
