/**
 * The integrity checker's attempt-history invariants against seeded
 * corruption: a database the engine wrote is clean; each hand-written
 * corruption is named by kind and job.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { completeJob, enqueueJob, failJob, verifyIntegrity, type ClaimedJob } from '../../src/index.js';
import { corrupter, only } from '../harness/corruption.js';
import { useTestDatabase } from '../harness/database.js';
import { claimOne } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let leased: ClaimedJob;
let done: ClaimedJob;
let retried: ClaimedJob;

const claim = (jobType: string) => claimOne(db.prisma, jobType, { leaseSeconds: 600 });

beforeAll(async () => {
  for (const jobType of ['ia.leased', 'ia.done', 'ia.retried']) await enqueueJob(db.prisma, { jobType, payload: {} });
  leased = await claim('ia.leased');
  done = await claim('ia.done');
  await completeJob(db.prisma, { ...done, output: null });
  retried = await claim('ia.retried');
  await failJob(db.prisma, { ...retried, error: { code: 'x', message: 'y' }, retryable: true });
});

const corrupt = corrupter(db);

describe('verifyIntegrity: job attempts', () => {
  it('finds nothing wrong in the attempts the engine wrote', async () => {
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it("names an open attempt of a job that holds no lease, and a leased job whose open attempt is another lease's", async () => {
    await corrupt(`INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at) VALUES ($1, 1, 1, 'w', now())`, [done.jobId]);
    await corrupt("UPDATE runledger.job_queue SET attempt_worker_id = 'ghost' WHERE id = $1", [leased.jobId]);
    const report = await verifyIntegrity(db.prisma);
    expect(only(report.violations, 'job.attempt_lease_mismatch')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          jobId: done.jobId,
          expected: { openAttempt: null },
          found: { status: 'SUCCEEDED', openAttempt: { runNumber: 1, attempt: 1, workerId: 'w' } },
        }),
        expect.objectContaining({ jobId: leased.jobId, expected: { openAttempt: { runNumber: 1, attempt: 1, workerId: 'w' } } }),
      ]),
    );
    expect(only(report.violations, 'job.attempt_lease_mismatch')).toHaveLength(2);
    await corrupt('DELETE FROM runledger.job_attempts WHERE job_id = $1 AND finished_at IS NULL', [done.jobId]);
    await corrupt("UPDATE runledger.job_queue SET attempt_worker_id = 'w' WHERE id = $1", [leased.jobId]);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it('names a job with two open attempts', async () => {
    await corrupt(`INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at) VALUES ($1, 1, 1, 'other', now())`, [leased.jobId]);
    const report = await verifyIntegrity(db.prisma);
    expect(only(report.violations, 'job.attempt_open_count')).toEqual([expect.objectContaining({ jobId: leased.jobId, found: { openAttempts: 2 } })]);
    await corrupt(`DELETE FROM runledger.job_attempts WHERE job_id = $1 AND worker_id = 'other'`, [leased.jobId]);
  });

  it('names an attempt that finishes before it starts or belongs to a later run', async () => {
    await corrupt("UPDATE runledger.job_attempts SET finished_at = started_at - interval '1 second' WHERE job_id = $1", [retried.jobId]);
    const skewed = await verifyIntegrity(db.prisma);
    expect(only(skewed.violations, 'job.attempt_history')).toEqual([expect.objectContaining({ jobId: retried.jobId })]);
    await corrupt('UPDATE runledger.job_attempts SET finished_at = started_at, run_number = 2 WHERE job_id = $1', [retried.jobId]);
    const later = await verifyIntegrity(db.prisma);
    expect(only(later.violations, 'job.attempt_history')).toEqual([
      expect.objectContaining({ jobId: retried.jobId, found: expect.objectContaining({ runNumber: 1 }) }),
    ]);
  });
});
