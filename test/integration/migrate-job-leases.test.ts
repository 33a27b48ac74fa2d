/**
 * Migration 20261229000000_job_leases on a database with history: every lease live at migration time gets
 * its lease row (a LEASED job's, a canceled keyed job's still inside its lease), trails and attempts read the
 * same afterwards, verifyIntegrity finds the lease rows and the jobs in step, and the lifecycle goes on from
 * there on the lease table: the claim's resource rules, a completion and a heartbeat of a lease granted
 * before the migration, the reaper of one that ran out.
 */
import { describe, expect, it } from 'vitest';
import { adminScope, claimJobs, completeJob, heartbeatJob, migrate, reapExpiredLeases, verifyIntegrity } from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20261229000000_job_leases';
const id = (n: number) => `01900000-0000-7000-8000-00000000000${n}`;
const LEASED = id(1);
const KEY_HELD = id(2);
const KEY_BLOCKED = id(3);
const KEY_FREE = id(4);
const KEY_QUIESCING = id(5);
const KEY_BEHIND_CANCEL = id(6);
const RUN_OUT = id(7);
const KEY_QUIESCED = id(8);
const SUCCEEDED = id(9);

/** What the code before the migration wrote: leases on the job row only. */
const HISTORY = `
  INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, heartbeat_at, started_at,
                                   finished_at, resource_key, output, attempt_seq, attempt_worker_id, attempt_started_at,
                                   attempt_leased_until, attempt_running_seq, attempt_running_at, attempt_closed_seq)
  VALUES ('${LEASED}', 'l.job', '{}', 'LEASED', 1, 'w-old', now() + interval '5 min', now(), now(), NULL, NULL, NULL,
          nextval('runledger.job_events_seq_seq'), 'w-old', now(), now() + interval '5 min', NULL, NULL, NULL),
         ('${KEY_HELD}', 'l.keyed', '{}', 'LEASED', 1, 'w-old', now() + interval '5 min', now(), now(), NULL, 'r1', NULL,
          nextval('runledger.job_events_seq_seq'), 'w-old', now(), now() + interval '5 min', NULL, NULL, NULL),
         ('${KEY_BLOCKED}', 'l.keyed', '{}', 'PENDING', 0, NULL, NULL, NULL, NULL, NULL, 'r1', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${KEY_FREE}', 'l.keyed', '{}', 'PENDING', 0, NULL, NULL, NULL, NULL, NULL, 'r2', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${KEY_QUIESCING}', 'l.keyed', '{}', 'CANCELED', 1, NULL, now() + interval '5 min', NULL, now(), now(), 'r3', NULL,
          NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${KEY_BEHIND_CANCEL}', 'l.keyed', '{}', 'PENDING', 0, NULL, NULL, NULL, NULL, NULL, 'r3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${RUN_OUT}', 'l.job', '{}', 'LEASED', 1, 'w-dead', now() - interval '1 min', now() - interval '2 min', now() - interval '2 min',
          NULL, NULL, NULL, nextval('runledger.job_events_seq_seq'), 'w-dead', now() - interval '2 min', now() - interval '1 min',
          nextval('runledger.job_events_seq_seq'), now() - interval '2 min', NULL),
         ('${KEY_QUIESCED}', 'l.keyed', '{}', 'CANCELED', 1, NULL, now() - interval '1 min', NULL, now() - interval '3 min',
          now() - interval '2 min', 'r4', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
         ('${SUCCEEDED}', 'l.job', '{}', 'SUCCEEDED', 1, NULL, NULL, NULL, now() - interval '2 min', now() - interval '1 min', NULL, '"done"',
          nextval('runledger.job_events_seq_seq'), 'w-old', now() - interval '2 min', now() + interval '3 min', NULL, NULL,
          nextval('runledger.job_events_seq_seq'));
  INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome, error_message)
  VALUES ('${KEY_QUIESCING}', 1, 1, 'w-old', now() - interval '1 min', now(), 'CANCELED', 'canceled'),
         ('${KEY_QUIESCED}', 1, 1, 'w-old', now() - interval '3 min', now() - interval '2 min', 'CANCELED', 'canceled');`;

const TRAIL = `SELECT to_jsonb(t) AS row FROM runledger.job_trail t ORDER BY t.job_id, t.position, t.event_type`;
const ATTEMPTS = `SELECT to_jsonb(a) AS row FROM runledger.job_attempt_history a ORDER BY a.job_id, a.seq`;
const LEASE_ROWS = `
  SELECT l.job_id AS id, l.resource_key, l.canceled, l.expires_at = jq.lease_expires_at AS matches
    FROM runledger.job_leases l LEFT JOIN runledger.job_queue jq ON jq.id = l.job_id ORDER BY l.job_id`;

describe(`migration ${MIGRATION}`, () => {
  it('gives every live lease its row, keeps trails and attempts, and leases go on through the lease table', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    await queryOnce(url, `BEGIN; ${HISTORY} COMMIT;`);
    const before = { trail: await queryOnce(url, TRAIL), attempts: await queryOnce(url, ATTEMPTS) };
    expect(before.trail.length).toBeGreaterThan(8);
    expect(before.attempts.length).toBeGreaterThan(3);

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    expect(await queryOnce(url, TRAIL)).toEqual(before.trail);
    expect(await queryOnce(url, ATTEMPTS)).toEqual(before.attempts);
    // The LEASED jobs' leases (the run-out one too: the reaper's to take) and the canceled keyed job inside its
    // lease, canceled; nothing for the canceled job whose lease ran out, nor for any other job.
    expect(await queryOnce(url, LEASE_ROWS)).toEqual([
      { id: LEASED, resource_key: null, canceled: false, matches: true },
      { id: KEY_HELD, resource_key: 'r1', canceled: false, matches: true },
      { id: KEY_QUIESCING, resource_key: 'r3', canceled: true, matches: true },
      { id: RUN_OUT, resource_key: null, canceled: false, matches: true },
    ]);
    // No index of job_queue names a lease column any more.
    const leaseIndexes = await queryOnce<{ name: string }>(
      url,
      `SELECT indexrelid::regclass::text AS name FROM pg_index
        WHERE indrelid = 'runledger.job_queue'::regclass
          AND pg_get_indexdef(indexrelid) ~ '(lease_owner|lease_expires_at|leased_resource_key|quiescing_until|heartbeat_at)'`,
    );
    expect(leaseIndexes).toEqual([]);

    const prisma = createPrismaClient(url, { max: 2 });
    try {
      const report = await verifyIntegrity(prisma, { scope: adminScope() });
      expect(report.violations.filter((v) => v.kind === 'job.lease_row_missing' || v.kind === 'lease.job_mismatch')).toEqual([]);

      // The key held by a migrated lease (r1) and the key a migrated canceled lease holds (r3) stay held.
      const typed = await claimJobs(prisma, { workerId: 'w-new', jobTypes: ['l.keyed'], limit: 10, leaseSeconds: 60 });
      expect(typed.map((j) => j.jobId)).toEqual([KEY_FREE]);

      // A lease granted before the migration heartbeats and completes; its row moves, then goes.
      const old = { jobId: KEY_HELD, runNumber: 1, attempt: 1, workerId: 'w-old' };
      const renewed = await heartbeatJob(prisma, { ...old, leaseSeconds: 120 });
      const [moved] = await queryOnce<{ expires_at: Date }>(url, `SELECT expires_at FROM runledger.job_leases WHERE job_id = $1`, [KEY_HELD]);
      expect(moved!.expires_at).toEqual(renewed.leaseExpiresAt);
      await completeJob(prisma, { ...old, output: null });
      expect(await queryOnce(url, `SELECT 1 FROM runledger.job_leases WHERE job_id = $1`, [KEY_HELD])).toEqual([]);
      const next = await claimJobs(prisma, { workerId: 'w-new', jobTypes: ['l.keyed'], limit: 10, leaseSeconds: 60 });
      expect(next.map((j) => j.jobId)).toEqual([KEY_BLOCKED]);

      // The lease that ran out before the migration is reaped from its row.
      expect(await reapExpiredLeases(prisma, { limit: 10 })).toMatchObject({ retried: [RUN_OUT] });
      expect(await queryOnce(url, `SELECT 1 FROM runledger.job_leases WHERE job_id = $1`, [RUN_OUT])).toEqual([]);
    } finally {
      await prisma.$disconnect();
    }
  });
});
