/** purgeFinished: what goes, what stays (quiescing cancels, unfinished work, lineage halves), in bounded batches. */
import { describe, expect, it } from 'vitest';
import {
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  compareAndReplaySucceededJob,
  completeJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  isRunledgerError,
  promoteEnqueueIntents,
  purgeFinished,
  recordJobEnqueueIntent,
  syncJobDefinitions,
  workflow,
} from '../../src/index.js';
import { z } from 'zod';
import { defineJob } from '../../src/worker/index.js';
import { useTestDatabase } from '../harness/database.js';
import { backdateJobs } from '../harness/finished-history.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const OLD = new Date('2020-01-01T00:00:00Z');
const CUTOFF = new Date('2021-01-01T00:00:00Z');

/** Runs one job of `jobType` to the given end and backdates its finish (and id) to OLD (unless `recent`); returns its id. */
async function finishedJob(jobType: string, end: 'SUCCEEDED' | 'DEAD_LETTERED' | 'CANCELED', recent = false): Promise<string> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: {}, maxAttempts: 1 });
  if (end === 'CANCELED') {
    await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() });
  } else {
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
    if (end === 'SUCCEEDED') await completeJob(db.prisma, { ...lease!, output: 1 });
    else await failJob(db.prisma, { ...lease!, error: { code: 'x.failed', message: 'no' }, retryable: false });
  }
  return recent ? jobId : (await backdate([jobId]))[0]!;
}

/** Finished at OLD, with ids of then (purgeFinished reads jobs in id order, up to the cutoff's ids): the new ids. */
async function backdate(ids: string[]): Promise<string[]> {
  return backdateJobs(db.prisma, ids, OLD);
}

async function existing(ids: string[]): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM runledger.job_queue WHERE id = ANY(${ids}::uuid[]) ORDER BY id`;
  return rows.map((r) => r.id);
}

async function eventCount(ids: string[]): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_trail WHERE job_id = ANY(${ids}::uuid[])`;
  return row!.n;
}

async function replay(sourceJobId: string, key: string): Promise<string> {
  const result = await compareAndReplaySucceededJob(db.prisma, {
    scope: noOrganizationScope(),
    sourceJobId,
    expectedRunNumber: 1,
    replayRequestKey: key,
    reason: 'again',
  });
  if (result.kind !== 'replayed') throw new Error(`not replayed: ${result.kind}`);
  return result.replay.jobId;
}

describe('purgeFinished on direct jobs', () => {
  it('deletes old finished jobs and their events in batches, keeps recent and unfinished ones, honours statuses', async () => {
    const old = [
      await finishedJob('p.a', 'SUCCEEDED'),
      await finishedJob('p.a', 'SUCCEEDED'),
      await finishedJob('p.a', 'DEAD_LETTERED'),
      await finishedJob('p.a', 'SUCCEEDED'),
    ];
    const oldCanceled = await finishedJob('p.a', 'CANCELED');
    const recent = await finishedJob('p.a', 'SUCCEEDED', true);
    const { jobId: pending } = await enqueueJob(db.prisma, { jobType: 'p.pending', payload: {} });
    expect(await eventCount(old)).toBeGreaterThan(0);

    const onlyCanceled = await purgeFinished(db.prisma, { olderThan: CUTOFF, statuses: ['CANCELED'], batchSize: 2 });
    expect(onlyCanceled).toMatchObject({ jobs: 1, workflowRuns: 0, dryRun: false });
    expect(await existing([oldCanceled])).toEqual([]);

    const dry = await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 2, dryRun: true });
    expect(dry).toMatchObject({ jobs: 4, dryRun: true });
    expect(await existing(old)).toHaveLength(4);

    const result = await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 2 });
    // 4 candidates in batches of 2: two full batches and a last, empty one; then one (empty) batch of runs.
    expect(result).toEqual({ jobs: 4, workflowRuns: 0, workflowJobs: 0, batches: 4, dryRun: false });
    expect(await existing(old)).toEqual([]);
    expect(await eventCount(old)).toBe(0);
    expect(await existing([recent, pending]).then((ids) => ids.length)).toBe(2);
  });

  it('deletes finished-job counters older than the day they are read for and than the cutoff, not newer ones; not in a dry run', async () => {
    const minutes = ['2020-06-01T00:00:00Z', new Date(Date.now() - 26 * 3_600_000).toISOString(), new Date(Date.now() - 3_600_000).toISOString()];
    for (const minute of minutes)
      await db.prisma.$executeRaw`
        INSERT INTO runledger.job_counts (minute, job_type, organization_id, status, workflow, shard, count)
        VALUES (date_trunc('minute', ${minute}::timestamptz), 'p.counted', '', 'SUCCEEDED', false, 0, 3)`;
    const left = async () =>
      (await db.prisma.$queryRaw<{ minute: Date }[]>`SELECT minute FROM runledger.job_counts WHERE job_type = 'p.counted' ORDER BY minute`).length;
    await purgeFinished(db.prisma, { olderThan: new Date(), dryRun: true });
    expect(await left()).toBe(3);
    // A cutoff in 2021 keeps what came after it, however old.
    await purgeFinished(db.prisma, { olderThan: CUTOFF });
    expect(await left()).toBe(2);
    await purgeFinished(db.prisma, { olderThan: new Date() });
    expect(await left()).toBe(1);
  });

  it('moves past rows that share a finish time with sub-millisecond digits (one batch statement finishes them together)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1) ids.push(await finishedJob('purge.same-instant', 'SUCCEEDED'));
    // What completeJobs does to a batch: one clock for all. A JS Date holds milliseconds only; the cursor must not lose the rest.
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET finished_at = '2020-01-01 00:00:00.123456+00' WHERE id = ANY(${ids}::uuid[])`;
    const bounded = <T>(work: Promise<T>) =>
      Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('purge did not finish: its cursor does not move')), 15_000))]);
    // Kept rows (another status asked for) and a dry run: nothing is deleted, so every batch must still move on.
    const kept = await bounded(purgeFinished(db.prisma, { olderThan: CUTOFF, statuses: ['CANCELED'], batchSize: 2 }));
    expect(kept.jobs).toBe(0);
    const dry = await bounded(purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 2, dryRun: true }));
    expect(dry.jobs).toBeGreaterThanOrEqual(6);
    expect(await existing(ids)).toHaveLength(6);
    const purged = await bounded(purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 2 }));
    expect(purged.jobs).toBeGreaterThanOrEqual(6);
    expect(await existing(ids)).toEqual([]);
  });

  it('keeps a canceled job whose lease is still quiescing, and purges it once the lease has passed', async () => {
    const { jobId: fresh } = await enqueueJob(db.prisma, { jobType: 'p.quiesce', payload: {} });
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['p.quiesce'], limit: 1, leaseSeconds: 600, markRunning: true });
    await cancelJob(db.prisma, { jobId: fresh, scope: noOrganizationScope() });
    const jobId = (await backdate([fresh]))[0]!;
    expect((await purgeFinished(db.prisma, { olderThan: CUTOFF })).jobs).toBe(0);
    expect(await existing([jobId])).toEqual([jobId]);
    await expireLeases(db.prisma, jobId);
    expect((await purgeFinished(db.prisma, { olderThan: CUTOFF })).jobs).toBe(1);
    expect(await existing([jobId])).toEqual([]);
  });

  it('deletes a replay lineage whole or keeps it whole, even across batch boundaries', async () => {
    // Lineage 1: source -> replay -> replay of the replay, all finished long ago: deleted together.
    const source = await finishedJob('p.lin', 'SUCCEEDED');
    let first = await replay(source, 'lin-1');
    const [lease1] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['p.lin'], limit: 1, leaseSeconds: 60, markRunning: true });
    await completeJob(db.prisma, { ...lease1!, output: 2 });
    let second = await replay(first, 'lin-2');
    const [lease2] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['p.lin'], limit: 1, leaseSeconds: 60, markRunning: true });
    await completeJob(db.prisma, { ...lease2!, output: 3 });
    [first, second] = (await backdate([first, second])) as [string, string];
    // Lineage 2: an old source whose replay is still pending: both kept.
    const keptSource = await finishedJob('p.lin2', 'SUCCEEDED');
    const keptReplay = await replay(keptSource, 'lin-3');
    // Lineage 3: an old source whose replay finished recently (after the cutoff): both kept.
    const recentSource = await finishedJob('p.lin3', 'SUCCEEDED');
    let recentReplay = await replay(recentSource, 'lin-4');
    await runRunnableJobs(db.prisma);

    const result = await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 1 });
    expect(result.jobs).toBe(3);
    expect(await existing([source, first, second])).toEqual([]);
    expect(await existing([keptSource, keptReplay])).toHaveLength(2);
    expect(await existing([recentSource, recentReplay])).toHaveLength(2);
    const [links] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_replays WHERE source_job_id = ANY(${[keptSource, recentSource]}::uuid[])`;
    expect(links!.n).toBe(2);

    // Once the replay is old too, the second lineage goes whole.
    [recentReplay] = (await backdate([recentReplay])) as [string];
    expect((await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 1 })).jobs).toBe(2);
    expect(await existing([recentSource, recentReplay])).toEqual([]);
  });

  it('deletes the settled enqueue intent that names a purged job, and keeps pending intents', async () => {
    await syncJobDefinitions(db.prisma, [defineJob('p.intent', z.object({}), () => null)]);
    await recordJobEnqueueIntent(db.prisma, { jobType: 'p.intent', payload: {}, idempotencyKey: 'promoted' });
    await recordJobEnqueueIntent(db.prisma, { jobType: 'p.no_definition', payload: {}, idempotencyKey: 'waiting' });
    await promoteEnqueueIntents(db.prisma, { jobTypes: ['p.intent', 'p.no_definition'], limit: 10 });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['p.intent'], limit: 1, leaseSeconds: 60, markRunning: true });
    await completeJob(db.prisma, { ...lease!, output: null });
    const [purgedId] = await backdate([lease!.jobId]);
    const intents = () => db.prisma.$queryRaw<{ key: string; state: string }[]>`
      SELECT idempotency_key AS key, state::text FROM runledger.job_enqueue_intents ORDER BY idempotency_key`;
    expect(await intents()).toEqual([
      { key: 'promoted', state: 'PROMOTED' },
      { key: 'waiting', state: 'PENDING' },
    ]);

    expect((await purgeFinished(db.prisma, { olderThan: CUTOFF })).jobs).toBe(1);
    expect(await existing([purgedId!])).toEqual([]);
    expect(await intents()).toEqual([{ key: 'waiting', state: 'PENDING' }]);
  });

  it('refuses bad input naming the field, before reading anything', async () => {
    for (const [input, field] of [
      [{ olderThan: CUTOFF, batchSize: 0 }, 'batchSize'],
      [{ olderThan: new Date(Number.NaN) }, 'olderThan'],
      [{ olderThan: CUTOFF, statuses: ['PENDING'] }, 'statuses.0'],
      // No filter is not all of them, an unknown field is not ignored, a time is a Date.
      [{ olderThan: CUTOFF, statuses: [] }, 'statuses'],
      [{ olderThan: CUTOFF, olderThen: CUTOFF }, 'olderThen'],
      [{ olderThan: '2026-01-01' }, 'olderThan'],
    ] as const) {
      const error = await purgeFinished(db.prisma, input as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'retention.invalid_input')).toBe(true);
      expect((error as { field: string }).field).toBe(field);
    }
  });
});

describe('purgeFinished on workflow runs', () => {
  it('deletes a finished run with its steps, edges, jobs and events; keeps unfinished, quiescing and recent runs', async () => {
    const build = (type: string) => workflow(type).job('a', `${type}.a`, {}).job('b', `${type}.b`, {}).afterSuccess('b', ['a']).build();
    const { workflowRunId: done } = await enqueueWorkflowRun(db.prisma, build('wf.done'));
    const { workflowRunId: recent } = await enqueueWorkflowRun(db.prisma, build('wf.recent'));
    await runRunnableJobs(db.prisma);
    const { workflowRunId: running } = await enqueueWorkflowRun(db.prisma, build('wf.running'));
    // Canceled while its first job runs: the job keeps its lease expiry as the quiescence marker.
    const { workflowRunId: quiescing } = await enqueueWorkflowRun(db.prisma, build('wf.quiesce'));
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['wf.quiesce.a'], limit: 1, leaseSeconds: 600, markRunning: true });
    await cancelWorkflowRun(db.prisma, { workflowRunId: quiescing, scope: noOrganizationScope() });
    await db.prisma
      .$executeRaw`UPDATE runledger.workflow_runs SET finished_at = ${OLD} WHERE id = ANY(${[done, quiescing, running]}::uuid[]) AND finished_at IS NOT NULL`;
    const doneJobs = await db.prisma.$queryRaw<{ id: string }[]>`SELECT job_id::text AS id FROM runledger.workflow_steps WHERE workflow_run_id = ${done}::uuid`;
    expect(doneJobs).toHaveLength(2);

    const dry = await purgeFinished(db.prisma, { olderThan: CUTOFF, dryRun: true });
    expect(dry).toMatchObject({ workflowRuns: 1, workflowJobs: 2 });
    const result = await purgeFinished(db.prisma, { olderThan: CUTOFF });
    expect(result).toMatchObject({ jobs: 0, workflowRuns: 1, workflowJobs: 2 });
    const left = await db.prisma.$queryRaw<
      { id: string }[]
    >`SELECT id::text FROM runledger.workflow_runs WHERE id = ANY(${[done, running, quiescing, recent]}::uuid[]) ORDER BY id`;
    expect(left.map((r) => r.id)).toEqual([recent, running, quiescing].sort());
    expect(await existing(doneJobs.map((j) => j.id))).toEqual([]);
    expect(await eventCount(doneJobs.map((j) => j.id))).toBe(0);
    const [orphans] = await db.prisma.$queryRaw<{ steps: number; edges: number }[]>`
      SELECT (SELECT count(*)::int FROM runledger.workflow_steps WHERE workflow_run_id = ${done}::uuid) AS steps,
             (SELECT count(*)::int FROM runledger.workflow_step_dependencies WHERE workflow_run_id = ${done}::uuid) AS edges`;
    expect(orphans).toEqual({ steps: 0, edges: 0 });

    // Once the canceled job's lease has passed, the canceled run goes too.
    const leased = await db.prisma.$queryRaw<{ id: string }[]>`
      SELECT id FROM runledger.job_queue
       WHERE id IN (SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${quiescing}::uuid) AND lease_expires_at IS NOT NULL`;
    await expireLeases(
      db.prisma,
      leased.map((row) => row.id),
    );
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF })).toMatchObject({ workflowRuns: 1, workflowJobs: 1 });
  });

  it('moves past runs that share a finish time with sub-millisecond digits', async () => {
    const runs: string[] = [];
    for (let i = 0; i < 5; i += 1) runs.push((await enqueueWorkflowRun(db.prisma, workflow('wf.same-instant').external('gate').build())).workflowRunId);
    for (const workflowRunId of runs) await cancelWorkflowRun(db.prisma, { workflowRunId, scope: noOrganizationScope() });
    await db.prisma.$executeRaw`UPDATE runledger.workflow_runs SET finished_at = '2020-01-01 00:00:00.654321+00' WHERE id = ANY(${runs}::uuid[])`;
    const bounded = <T>(work: Promise<T>) =>
      Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('purge did not finish: its cursor does not move')), 15_000))]);
    // A dry run deletes nothing, so every batch must still move on.
    expect(await bounded(purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 2, dryRun: true }))).toMatchObject({ workflowRuns: 5 });
    expect(await bounded(purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 2 }))).toMatchObject({ workflowRuns: 5 });
  });
});
