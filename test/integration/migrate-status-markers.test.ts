/**
 * Migration 20261228000000_status_markers on a database with history: the generated markers read as the
 * statuses they stand for on the rows already there, trails and attempts read the same afterwards, and the
 * claims (untyped, typed, and the execution-resource rules through resource_claimable(): a key held by a
 * lease, a key held by a canceled job inside its lease) go on from there on the rebuilt indexes. The migration
 * after it (20261229000000_job_leases) is applied too: the lease markers and their indexes went on to job_leases
 * (test/integration/migrate-job-leases.test.ts), so only the markers that stay are read here.
 */
import { describe, expect, it } from 'vitest';
import { adminScope, claimJobs, countDeadLetteredJobs, migrate } from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20261228000000_status_markers';
const id = (n: number) => `01900000-0000-7000-8000-00000000000${n}`;
const [PENDING, LEASED, SUCCEEDED, DEAD, KEY_HELD, KEY_BLOCKED, KEY_FREE, KEY_QUIESCING, KEY_BEHIND_CANCEL] = [1, 2, 3, 4, 5, 6, 7, 8, 9].map(id);

/** What the code before the migration wrote (lean-ledger layout: the attempt on the job row). */
const HISTORY = `
  INSERT INTO runledger.job_queue (id, job_type, payload, status, priority, attempt, lease_owner, lease_expires_at, heartbeat_at,
                                   output, started_at, finished_at, resource_key, last_error_code, last_error_message,
                                   attempt_seq, attempt_worker_id, attempt_started_at, attempt_leased_until, attempt_closed_seq)
  VALUES ('${PENDING}', 'm.job', '{}', 'PENDING', 5, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${LEASED}', 'm.job', '{}', 'LEASED', 0, 1, 'w-old', now() + interval '5 min', now(), NULL, now(), NULL, NULL, NULL, NULL,
          nextval('runledger.job_events_seq_seq'), 'w-old', now(), now() + interval '5 min', NULL),
         ('${SUCCEEDED}', 'm.job', '{}', 'SUCCEEDED', 0, 1, NULL, NULL, NULL, '"done"', now() - interval '2 min', now() - interval '1 min',
          NULL, NULL, NULL, nextval('runledger.job_events_seq_seq'), 'w-old', now() - interval '2 min', now() + interval '3 min',
          nextval('runledger.job_events_seq_seq')),
         ('${DEAD}', 'm.job', '{}', 'DEAD_LETTERED', 0, 1, NULL, NULL, NULL, NULL, now() - interval '2 min', now() - interval '1 min',
          NULL, 'boom', 'it failed', NULL, NULL, NULL, NULL, NULL),
         ('${KEY_HELD}', 'm.keyed', '{}', 'LEASED', 0, 1, 'w-old', now() + interval '5 min', now(), NULL, now(), NULL, 'r1', NULL, NULL,
          NULL, NULL, NULL, NULL, NULL),
         ('${KEY_BLOCKED}', 'm.keyed', '{}', 'PENDING', 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 'r1', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${KEY_FREE}', 'm.keyed', '{}', 'PENDING', 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 'r2', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${KEY_QUIESCING}', 'm.keyed', '{}', 'CANCELED', 0, 1, NULL, now() + interval '5 min', NULL, NULL, now(), now(), 'r3',
          'job.canceled', 'canceled', NULL, NULL, NULL, NULL, NULL),
         ('${KEY_BEHIND_CANCEL}', 'm.keyed', '{}', 'PENDING', 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 'r3', NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome, error_code, error_message)
  VALUES ('${DEAD}', 1, 1, 'w-old', now() - interval '2 min', now() - interval '1 min', 'DEAD_LETTERED', 'boom', 'it failed');`;

const TRAIL = `SELECT to_jsonb(t) AS row FROM runledger.job_trail t ORDER BY t.job_id, t.position, t.event_type`;
const ATTEMPTS = `SELECT to_jsonb(a) AS row FROM runledger.job_attempt_history a ORDER BY a.job_id, a.seq`;

describe(`migration ${MIGRATION}`, () => {
  it('marks the PENDING rows already there, keeps trails and attempts, and claims through the rebuilt indexes', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    await queryOnce(url, `BEGIN; ${HISTORY} COMMIT;`);
    const before = { trail: await queryOnce(url, TRAIL), attempts: await queryOnce(url, ATTEMPTS) };
    expect(before.trail.length).toBeGreaterThan(7);
    expect(before.attempts.length).toBeGreaterThan(0);

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    expect(await queryOnce(url, TRAIL)).toEqual(before.trail);
    expect(await queryOnce(url, ATTEMPTS)).toEqual(before.attempts);
    const marks = await queryOnce<{ status: string; claimable: boolean | null; dead: boolean }>(
      url,
      `SELECT status::text, claimable,
              dead_lettered_at IS NOT DISTINCT FROM finished_at AND dead_lettered_at IS NOT NULL AS dead
         FROM runledger.job_queue ORDER BY id`,
    );
    expect(marks.map((m) => [m.status, m.claimable, m.dead])).toEqual([
      ['PENDING', true, false],
      ['LEASED', null, false],
      ['SUCCEEDED', null, false],
      ['DEAD_LETTERED', null, true],
      ['LEASED', null, false],
      ['PENDING', true, false],
      ['PENDING', true, false],
      ['CANCELED', null, false],
      ['PENDING', true, false],
    ]);

    const prisma = createPrismaClient(url, { max: 2 });
    try {
      // The bulk requeue reads the dead letter there before the migration through the rebuilt index.
      expect(await countDeadLetteredJobs(prisma, { scope: adminScope(), filter: { jobType: 'm.job' } })).toMatchObject({ count: 1 });
      // Untyped: the highest priority first. Typed: the free key's job, not the one whose key is leased (r1)
      // nor the one whose key a canceled job holds until its lease runs out (r3).
      const untyped = await claimJobs(prisma, { workerId: 'w-new', limit: 1, leaseSeconds: 60 });
      expect(untyped.map((j) => j.jobId)).toEqual([PENDING]);
      const typed = await claimJobs(prisma, { workerId: 'w-new', jobTypes: ['m.job', 'm.keyed'], limit: 10, leaseSeconds: 60 });
      expect(typed.map((j) => j.jobId)).toEqual([KEY_FREE]);
      const after = await queryOnce<{ id: string; claimable: boolean | null }>(
        url,
        `SELECT id, claimable FROM runledger.job_queue WHERE id = ANY($1::uuid[]) ORDER BY id`,
        [[PENDING, KEY_BLOCKED, KEY_FREE, KEY_BEHIND_CANCEL]],
      );
      expect(after).toEqual([
        { id: PENDING, claimable: null },
        { id: KEY_BLOCKED, claimable: true },
        { id: KEY_FREE, claimable: null },
        { id: KEY_BEHIND_CANCEL, claimable: true },
      ]);
      // A second claimer racing for a held key is refused by the lease table's unique index.
      await expect(
        queryOnce(url, `INSERT INTO runledger.job_leases (expires_at, job_id, resource_key) VALUES (now() + interval '1 min', $1, 'r1')`, [KEY_BLOCKED]),
      ).rejects.toThrow(/job_leases_resource_uidx/);
    } finally {
      await prisma.$disconnect();
    }
  });
});
