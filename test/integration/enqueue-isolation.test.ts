/**
 * Keyed enqueue needs READ COMMITTED: under REPEATABLE READ or SERIALIZABLE a
 * concurrent duplicate committed after the snapshot cannot be read, so "the
 * same key returns the existing job/run" cannot be kept. A joined transaction
 * at a stronger level is refused with a coded error before anything is
 * written, and stays usable: the caller can catch the error and commit its own
 * writes. Unkeyed enqueues are not affected.
 */
import { describe, expect, it } from 'vitest';
import { enqueueJob, enqueueJobs, enqueueWorkflowRun, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function counts(tag: string): Promise<{ jobs: number; runs: number; events: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; runs: number; events: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue WHERE job_type LIKE ${`${tag}%`}) AS jobs,
           (SELECT count(*)::int FROM runledger.workflow_runs WHERE workflow_type LIKE ${`${tag}%`}) AS runs,
           (SELECT count(*)::int FROM runledger.job_trail e JOIN runledger.job_queue jq ON jq.id = e.job_id
             WHERE jq.job_type LIKE ${`${tag}%`}) AS events`;
  return row!;
}

const levels = ['RepeatableRead', 'Serializable'] as const;

describe('keyed enqueue under a stronger isolation', () => {
  it.each(levels)('enqueueJob / enqueueJobs with a key are refused under %s; the caller still commits its own writes', async (isolationLevel) => {
    const tag = `iso.job.${isolationLevel}`;
    const errors = await db.prisma.$transaction(
      async (tx) => {
        const single = await enqueueJob(tx, { jobType: `${tag}.keyed`, payload: {}, idempotencyKey: 'k1' }).catch((e: unknown) => e);
        // One keyed item makes the whole batch keyed.
        const batch = await enqueueJobs(tx, [
          { jobType: `${tag}.keyed`, payload: 1 },
          { jobType: `${tag}.keyed`, payload: 2, idempotencyKey: 'k2' },
        ]).catch((e: unknown) => e);
        // The transaction is still usable: the caller's own write (an unkeyed enqueue here) commits.
        await enqueueJob(tx, { jobType: `${tag}.plain`, payload: {} });
        return [single, batch];
      },
      { isolationLevel },
    );
    for (const error of errors) {
      expect(error).toMatchObject({ code: 'job.enqueue_idempotency_unsupported_isolation', field: 'transaction.isolationLevel' });
    }
    expect(await counts(`${tag}.keyed`)).toEqual({ jobs: 0, runs: 0, events: 0 });
    expect(await counts(`${tag}.plain`)).toEqual({ jobs: 1, runs: 0, events: 1 });
  });

  it.each(levels)('enqueueWorkflowRun with a key is refused under %s; without one it is enqueued', async (isolationLevel) => {
    const tag = `iso.wf.${isolationLevel}`;
    const error = await db.prisma.$transaction(
      async (tx) => {
        const refused = await enqueueWorkflowRun(tx, workflow(`${tag}.keyed`).job('a', `${tag}.keyed.a`, {}).idempotencyKey('k').build()).catch(
          (e: unknown) => e,
        );
        await enqueueWorkflowRun(tx, workflow(`${tag}.plain`).job('a', `${tag}.plain.a`, {}).build());
        return refused;
      },
      { isolationLevel },
    );
    expect(error).toMatchObject({ code: 'workflow.enqueue_idempotency_unsupported_isolation', field: 'transaction.isolationLevel' });
    expect(await counts(`${tag}.keyed`)).toEqual({ jobs: 0, runs: 0, events: 0 });
    expect(await counts(`${tag}.plain`)).toEqual({ jobs: 1, runs: 1, events: 1 });
  });

  it('keyed enqueues in a joined READ COMMITTED transaction and on a root client are unaffected', async () => {
    await db.prisma.$transaction(
      async (tx) => {
        await enqueueJob(tx, { jobType: 'iso.rc.job', payload: {}, idempotencyKey: 'k' });
        await enqueueWorkflowRun(tx, workflow('iso.rc.wf').job('a', 'iso.rc.wf.a', {}).idempotencyKey('k').build());
      },
      { isolationLevel: 'ReadCommitted' },
    );
    expect(await enqueueJob(db.prisma, { jobType: 'iso.rc.job', payload: {}, idempotencyKey: 'k' })).toMatchObject({ disposition: 'existing' });
    expect(await enqueueWorkflowRun(db.prisma, workflow('iso.rc.wf').job('a', 'iso.rc.wf.a', {}).idempotencyKey('k').build())).toMatchObject({
      disposition: 'existing',
    });
  });
});
