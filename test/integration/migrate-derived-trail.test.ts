/**
 * Migration 20261222000000_lean_ledger on a database written by the
 * code before it, whose every transition stored a job_events row and whose
 * attempts were rows of their own: the trails and attempts read the same
 * afterwards, a live lease's open attempt moves onto its job row with its
 * stored RUNNING (so reaping and markJobRunning read one place), and the new code
 * goes on from there (a completion appends SUCCEEDED, a never-started lease is
 * given back, a new attempt sorts after the old ones).
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, completeJob, enqueueJob, listJobAttempts, listJobEvents, migrate, noOrganizationScope, reapExpiredLeases } from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20261222000000_lean_ledger';
const FINISHED = '01900000-0000-7000-8000-000000000001';
const STARTED = '01900000-0000-7000-8000-000000000002';
const UNSTARTED = '01900000-0000-7000-8000-000000000003';

/** What the code before the migration wrote: the job rows, their attempts and every event, in one transaction. */
const OLD_HISTORY = `
  INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, heartbeat_at, output,
                                   started_at, finished_at, created_at)
  VALUES ('${FINISHED}', 'old.job', '{}', 'SUCCEEDED', 1, NULL, NULL, NULL, '"done"', now() - interval '9 min', now() - interval '8 min', now() - interval '10 min'),
         ('${STARTED}', 'old.job', '{}', 'LEASED', 1, 'w-old', now() + interval '5 min', now(), NULL, now() - interval '1 min', NULL, now() - interval '2 min'),
         ('${UNSTARTED}', 'old.unstarted', '{}', 'LEASED', 1, 'w-old', now() - interval '1 s', now(), NULL, NULL, NULL, now() - interval '2 min');
  INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome)
  VALUES ('${FINISHED}', 1, 1, 'w-old', now() - interval '9 min', now() - interval '8 min', 'SUCCEEDED'),
         ('${STARTED}', 1, 1, 'w-old', now() - interval '1 min', NULL, NULL),
         ('${UNSTARTED}', 1, 1, 'w-old', now() - interval '1 min', NULL, NULL);
  INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload, created_at)
  SELECT gen_random_uuid(), e.job_id::uuid, e.event_type::runledger.job_event_type, 1, e.attempt, e.payload::jsonb, now() - e.ago::interval
    FROM (VALUES ('${FINISHED}', 'ENQUEUED', 0, NULL, '10 min', 1),
                 ('${FINISHED}', 'LEASED', 1, '{"workerId": "w-old", "leaseExpiresAt": "2026-01-01T00:00:00+00:00"}', '9 min', 2),
                 ('${FINISHED}', 'RUNNING', 1, '{"workerId": "w-old"}', '9 min', 3),
                 ('${FINISHED}', 'SUCCEEDED', 1, NULL, '8 min', 4),
                 ('${STARTED}', 'ENQUEUED', 0, NULL, '2 min', 5),
                 ('${STARTED}', 'LEASED', 1, '{"workerId": "w-old", "leaseExpiresAt": "2026-01-01T00:00:00+00:00"}', '1 min', 6),
                 ('${STARTED}', 'RUNNING', 1, '{"workerId": "w-old"}', '1 min', 7),
                 ('${UNSTARTED}', 'ENQUEUED', 0, NULL, '2 min', 8),
                 ('${UNSTARTED}', 'LEASED', 1, '{"workerId": "w-old", "leaseExpiresAt": "2026-01-01T00:00:00+00:00"}', '1 min', 9))
         AS e(job_id, event_type, attempt, payload, ago, ord)
   ORDER BY e.ord;`;

type Trail = { type: string; attempt: number; payload: unknown; at: number }[];

describe(`migration ${MIGRATION}`, () => {
  it('reads the stored history as before and carries live leases over to the derived trail', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    await queryOnce(url, `BEGIN; ${OLD_HISTORY} COMMIT;`);
    const stored = async (jobId: string): Promise<Trail> =>
      (
        await queryOnce<{ event_type: string; attempt: number; payload: unknown; created_at: Date }>(
          url,
          'SELECT event_type, attempt, payload, created_at FROM runledger.job_events WHERE job_id = $1 ORDER BY seq',
          [jobId],
        )
      ).map((e) => ({ type: e.event_type, attempt: e.attempt, payload: e.payload, at: e.created_at.getTime() }));
    const before = { finished: await stored(FINISHED), started: await stored(STARTED), unstarted: await stored(UNSTARTED) };

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    const prisma = createPrismaClient(url, { max: 2 });
    try {
      const scope = noOrganizationScope();
      const trail = async (jobId: string): Promise<Trail> =>
        (await listJobEvents(prisma, { scope, jobId })).items.map((e) => ({
          type: e.eventType,
          attempt: e.attempt,
          payload: e.payload,
          at: e.createdAt.getTime(),
        }));
      expect(await trail(FINISHED)).toEqual(before.finished);
      expect(await trail(STARTED)).toEqual(before.started);
      expect(await trail(UNSTARTED)).toEqual(before.unstarted);
      // The live leases' open attempts moved onto their job rows, the started one's RUNNING with it, and only there.
      expect((await stored(STARTED)).map((e) => e.type)).toEqual(['ENQUEUED', 'LEASED']);
      expect(await queryOnce(url, 'SELECT job_id FROM runledger.job_attempts WHERE finished_at IS NULL')).toEqual([]);
      expect(
        await queryOnce(
          url,
          `SELECT id, attempt_worker_id, attempt_running_seq IS NOT NULL AS running FROM runledger.job_queue
                                    WHERE status = 'LEASED' ORDER BY id`,
        ),
      ).toEqual([
        { id: STARTED, attempt_worker_id: 'w-old', running: true },
        { id: UNSTARTED, attempt_worker_id: 'w-old', running: false },
      ]);

      // The new code goes on: the started lease completes, the unstarted one is given back without using its attempt.
      await completeJob(prisma, { jobId: STARTED, runNumber: 1, attempt: 1, workerId: 'w-old', output: 'ok' });
      expect((await trail(STARTED)).map((e) => e.type)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'SUCCEEDED']);
      const attemptsOf = async (jobId: string) => (await listJobAttempts(prisma, { scope, jobId })).items.map((x) => [x.workerId, x.outcome]);
      expect(await attemptsOf(STARTED)).toEqual([['w-old', 'SUCCEEDED']]);
      expect(await attemptsOf(FINISHED)).toEqual([['w-old', 'SUCCEEDED']]);
      expect(await reapExpiredLeases(prisma, { limit: 10 })).toEqual({ retried: [UNSTARTED], deadLettered: [] });
      expect((await trail(UNSTARTED)).map((e) => [e.type, (e.payload as { started?: boolean } | null)?.started])).toEqual([
        ['ENQUEUED', undefined],
        ['LEASED', undefined],
        ['LEASE_EXPIRED', false],
      ]);
      const [again] = await claimJobs(prisma, { workerId: 'w-new', jobTypes: ['old.unstarted'], limit: 1, leaseSeconds: 60, markRunning: true });
      expect(again).toMatchObject({ jobId: UNSTARTED, attempt: 1 });
      expect((await trail(UNSTARTED)).map((e) => e.type)).toEqual(['ENQUEUED', 'LEASED', 'LEASE_EXPIRED', 'LEASED', 'RUNNING']);
      const attempts = (await listJobAttempts(prisma, { scope, jobId: UNSTARTED })).items;
      expect(attempts.map((a) => [a.workerId, a.outcome])).toEqual([
        ['w-old', 'LEASE_EXPIRED'],
        ['w-new', null],
      ]);
      // A job enqueued now writes its row only, and its trail starts with ENQUEUED all the same.
      const { jobId } = await enqueueJob(prisma, { jobType: 'new.job', payload: {} });
      expect(await queryOnce(url, 'SELECT 1 FROM runledger.job_events WHERE job_id = $1', [jobId])).toEqual([]);
      expect((await trail(jobId)).map((e) => e.type)).toEqual(['ENQUEUED']);
    } finally {
      await prisma.$disconnect();
    }
  });
});
