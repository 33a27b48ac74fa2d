/**
 * The finished-job counters (job_counts, migration 20261229000001_finished_reads): every terminal statement
 * adds its finished jobs once, by minute, type, organization, status and kind, and concurrent completions of
 * the same type and minute in many sessions neither deadlock nor lose a count.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  completeJobs,
  enqueueJobs,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  organizationScope,
  reapExpiredLeases,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { expireLeases } from '../harness/leases.js';
import { raceInTransactions } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

beforeEach(async () => {
  await db.prisma.$executeRaw`TRUNCATE runledger.job_queue, runledger.job_counts CASCADE`;
});

type Key = { minute: string; job_type: string; organization_id: string; status: string; workflow: boolean; count: number };
const ORDER = 'ORDER BY minute, job_type, organization_id, status, workflow';

/** The counters, summed over shards. */
async function counters(): Promise<Key[]> {
  return db.prisma.$queryRawUnsafe<Key[]>(
    `SELECT minute::text, job_type, organization_id, status::text, workflow, sum(count)::int AS count
       FROM runledger.job_counts GROUP BY 1, 2, 3, 4, 5 ${ORDER}`,
  );
}
/** The same keys counted from the finished rows themselves. */
async function history(): Promise<Key[]> {
  return db.prisma.$queryRawUnsafe<Key[]>(
    `SELECT date_trunc('minute', finished_at)::text AS minute, job_type, COALESCE(organization_id, '') AS organization_id,
            status::text, workflow_step_id IS NOT NULL AS workflow, count(*)::int AS count
       FROM runledger.job_queue WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED') GROUP BY 1, 2, 3, 4, 5 ${ORDER}`,
  );
}
const claim = (jobTypes: string[], limit = 100) => claimJobs(db.prisma, { workerId: 'w', jobTypes, limit, leaseSeconds: 600, markRunning: true });

describe('finished-job counters', () => {
  it('count every terminal transition once: completion, dead letter, cancel, run cancel, reaped dead letter; not a retry', async () => {
    await enqueueJobs(db.prisma, [
      { jobType: 'fc.done', payload: {}, organizationId: 'org-1' },
      { jobType: 'fc.done', payload: {}, organizationId: 'org-1' },
      { jobType: 'fc.done', payload: {}, organizationId: 'org-2' },
      { jobType: 'fc.done', payload: {} },
      { jobType: 'fc.dead', payload: {}, maxAttempts: 1 },
      { jobType: 'fc.retry', payload: {}, maxAttempts: 3 },
      { jobType: 'fc.cancel', payload: {}, organizationId: 'org-1' },
      { jobType: 'fc.reaped', payload: {}, maxAttempts: 1 },
    ]);
    await completeJobs(
      db.prisma,
      (await claim(['fc.done'])).map((lease) => ({ ...lease, output: null })),
    );
    const [dead] = await claim(['fc.dead']);
    await failJob(db.prisma, { ...dead!, error: { code: 'x.bad', message: 'bad' }, retryable: false });
    const [retry] = await claim(['fc.retry']);
    await failJob(db.prisma, { ...retry!, error: { code: 'x.flaky', message: 'flaky' }, retryable: true });
    const [pendingCancel] = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM runledger.job_queue WHERE job_type = 'fc.cancel'`;
    await cancelJob(db.prisma, { scope: organizationScope('org-1'), jobId: pendingCancel!.id });
    const [reaped] = await claim(['fc.reaped']);
    await expireLeases(db.prisma, reaped!.jobId);
    expect((await reapExpiredLeases(db.prisma, { limit: 10 })).deadLettered).toEqual([reaped!.jobId]);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('fc.wf').job('a', 'fc.step', {}).job('b', 'fc.step', {}).build());
    await cancelWorkflowRun(db.prisma, { workflowRunId, scope: noOrganizationScope() });

    const counted = await counters();
    expect(counted).toEqual(await history());
    const total = (status: string, jobType?: string) =>
      counted.filter((k) => k.status === status && (jobType === undefined || k.job_type === jobType)).reduce((n, k) => n + k.count, 0);
    expect(total('SUCCEEDED', 'fc.done')).toBe(4);
    expect(total('DEAD_LETTERED')).toBe(2);
    expect(total('CANCELED', 'fc.cancel')).toBe(1);
    expect(counted.filter((k) => k.job_type === 'fc.step').map((k) => [k.status, k.workflow, k.count])).toEqual([['CANCELED', true, 2]]);
    expect(counted.some((k) => k.job_type === 'fc.retry')).toBe(false);
    expect(counted.find((k) => k.job_type === 'fc.done' && k.organization_id === '')?.count).toBe(1);
  });

  it('twelve sessions completing the same types in the same minute at once all commit, and no count is lost', async () => {
    const SESSIONS = 12;
    const PER = 20;
    const types = ['fc.hot.a', 'fc.hot.b'];
    await enqueueJobs(
      db.prisma,
      Array.from({ length: SESSIONS * PER }, (_, i) => ({ jobType: types[i % 2]!, payload: {}, organizationId: i % 3 === 0 ? 'org-x' : 'org-y' })),
    );
    const leases = await claim(types, SESSIONS * PER);
    expect(leases).toHaveLength(SESSIONS * PER);
    // Each session completes a slice of both types and both organizations, in reversed order for half of them:
    // the statement sorts its counter keys, so the order of the batch does not matter.
    const slices: ClaimedJob[][] = Array.from({ length: SESSIONS }, (_, s) => {
      const slice = leases.filter((_, i) => i % SESSIONS === s);
      return s % 2 === 0 ? slice : slice.reverse();
    });
    const done = await raceInTransactions(db, SESSIONS, (tx, s) =>
      completeJobs(
        tx,
        slices[s]!.map((lease) => ({ ...lease, output: null })),
      ),
    );
    expect(done.map((r) => r.length)).toEqual(Array(SESSIONS).fill(PER));
    expect(await counters()).toEqual(await history());
    const [sum] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT sum(count)::int AS n FROM runledger.job_counts`;
    expect(sum!.n).toBe(SESSIONS * PER);
  });
});
