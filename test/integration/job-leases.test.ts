/**
 * The lease rows (runledger.job_leases, migration 20261229000000_job_leases; src/queue/statements/lease-rows.ts):
 * every write of a job's lease keeps its row in step in the same statement, the one-lease-per-resource rule
 * holds on them under concurrent transactions, the fence still refuses a stale owner, the reaper reads them
 * oldest first, a cancellation's row holds the key until it runs out, and verifyIntegrity catches a row and
 * a job out of step either way.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  adminScope,
  cancelJob,
  claimJobs,
  completeJob,
  continueJob,
  enqueueJob,
  enqueueJobs,
  failJob,
  heartbeatJob,
  isRunledgerError,
  noOrganizationScope,
  organizationScope,
  reapExpiredLeases,
  releaseJob,
  verifyIntegrity,
  type ClaimedJob,
} from '../../src/index.js';
import { isResourceClaimRace } from '../../src/queue/claim.js';
import { useTestDatabase } from '../harness/database.js';
import { expireLeases, setLeaseExpiry } from '../harness/leases.js';
import { barrier } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

beforeEach(async () => {
  await db.prisma.$executeRaw`TRUNCATE runledger.job_queue CASCADE`;
  await db.prisma.$executeRaw`TRUNCATE runledger.job_leases`;
});

interface LeaseRow {
  job_id: string;
  resource_key: string | null;
  canceled: boolean;
  /** The row's expiry is the job row's lease_expires_at. */
  matches: boolean;
}

async function leaseRows(): Promise<LeaseRow[]> {
  return db.prisma.$queryRaw<LeaseRow[]>`
    SELECT l.job_id, l.resource_key, l.canceled, l.expires_at = jq.lease_expires_at AS matches
      FROM runledger.job_leases l LEFT JOIN runledger.job_queue jq ON jq.id = l.job_id
     ORDER BY l.expires_at, l.job_id`;
}

async function claimOne(jobType: string, workerId = 'w1', leaseSeconds = 60): Promise<ClaimedJob> {
  const [job] = await claimJobs(db.prisma, { workerId, jobTypes: [jobType], limit: 1, leaseSeconds, markRunning: true });
  if (!job) throw new Error(`nothing of ${jobType} to claim`);
  return job;
}

/** Waits until `count` backends of this database are blocked on a heavyweight lock (polling the server's view). */
async function lockWaiters(count: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
    if (row!.n >= count) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} lock waiter(s); saw ${row!.n}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function latch(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe('lease rows', () => {
  it('are inserted by the claim, moved by the heartbeat and deleted by completion, failure, release and continuation', async () => {
    const jobs = await enqueueJobs(
      db.prisma,
      [1, 2, 3, 4].map((n) => ({ jobType: 'lr.life', payload: { n }, resource: n === 1 ? 'life-key' : undefined })),
    );
    const claimed = await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['lr.life'], limit: 4, leaseSeconds: 60 });
    expect(claimed.map((j) => j.jobId).sort()).toEqual(jobs.map((j) => j.jobId).sort());
    const rows = await leaseRows();
    expect(rows.map((r) => r.job_id).sort()).toEqual(jobs.map((j) => j.jobId).sort());
    expect(rows.every((r) => r.matches && !r.canceled)).toBe(true);
    expect(rows.find((r) => r.job_id === jobs[0]!.jobId)?.resource_key).toBe('life-key');

    const [a, b, c, d] = jobs.map((j) => claimed.find((x) => x.jobId === j.jobId)!);
    const renewed = await heartbeatJob(db.prisma, { ...a!, leaseSeconds: 600 });
    const [moved] = await db.prisma.$queryRaw<{ expires_at: Date }[]>`SELECT expires_at FROM runledger.job_leases WHERE job_id = ${a!.jobId}::uuid`;
    expect(moved!.expires_at).toEqual(renewed.leaseExpiresAt);
    expect((await leaseRows()).every((r) => r.matches)).toBe(true);

    await completeJob(db.prisma, { ...a!, output: 'done' });
    await failJob(db.prisma, { ...b!, error: { code: 'lr.failed', message: 'again' }, retryable: true });
    await releaseJob(db.prisma, { ...c!, reason: 'lr.released' });
    await continueJob(db.prisma, { ...d!, delayMs: 60_000 });
    expect(await leaseRows()).toEqual([]);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it('hold one live lease per resource key: two concurrent claims lease one job of the key between them', async () => {
    await enqueueJobs(
      db.prisma,
      [1, 2, 3].map((n) => ({ jobType: 'lr.race', payload: { n }, resource: 'race-key' })),
    );
    const clients = [db.newClient({ max: 1 }), db.newClient({ max: 1 })];
    const arrive = barrier(2);
    try {
      const results = await Promise.all(
        clients.map((client, i) =>
          client.$transaction(async (tx) => {
            await tx.$queryRaw`SELECT 1`;
            await arrive();
            return claimJobs(tx, { workerId: `w${i}`, jobTypes: ['lr.race'], limit: 3, leaseSeconds: 60 });
          }),
        ),
      );
      expect(results.flat()).toHaveLength(1);
    } finally {
      await Promise.all(clients.map((client) => client.$disconnect()));
    }
    expect((await leaseRows()).map((r) => [r.resource_key, r.canceled, r.matches])).toEqual([['race-key', false, true]]);
  });

  it('refuse a second live lease of a key at insert, once the first commits (what a claim retries on)', async () => {
    const [first, second] = await enqueueJobs(
      db.prisma,
      [1, 2].map((n) => ({ jobType: 'lr.refuse', payload: { n }, resource: 'refuse-key' })),
    );
    const holder = db.newClient({ max: 1 });
    const racer = db.newClient({ max: 1 });
    const claimed = latch();
    const commit = latch();
    try {
      const holding = holder.$transaction(async (tx) => {
        const jobs = await claimJobs(tx, { workerId: 'w1', jobTypes: ['lr.refuse'], limit: 1, leaseSeconds: 60 });
        claimed.open();
        await commit.wait;
        return jobs;
      });
      await claimed.wait;
      // A claim whose snapshot missed the first lease inserts the key's second live row: it waits for the first.
      const racing = racer.$executeRaw`
        INSERT INTO runledger.job_leases (expires_at, job_id, resource_key) VALUES (now() + interval '1 minute', ${second!.jobId}::uuid, 'refuse-key')`.catch(
        (e: unknown) => e,
      );
      await lockWaiters(1);
      commit.open();
      expect((await holding).map((j) => j.jobId)).toEqual([first!.jobId]);
      expect(isResourceClaimRace(await racing)).toBe(true);
    } finally {
      await Promise.all([holder.$disconnect(), racer.$disconnect()]);
    }
    expect((await leaseRows()).map((r) => r.job_id)).toEqual([first!.jobId]);
  });

  it('follow a heartbeat that committed while the completion waited for the job row', async () => {
    await enqueueJob(db.prisma, { jobType: 'lr.wait', payload: {} });
    const lease = await claimOne('lr.wait');
    const beater = db.newClient({ max: 1 });
    const completer = db.newClient({ max: 1 });
    const beaten = latch();
    const commit = latch();
    try {
      const beating = beater.$transaction(async (tx) => {
        const renewed = await heartbeatJob(tx, { ...lease, leaseSeconds: 300 });
        beaten.open();
        await commit.wait;
        return renewed;
      });
      await beaten.wait;
      const completing = completeJob(completer, { ...lease, output: 1 });
      await lockWaiters(1);
      commit.open();
      await beating;
      await completing;
    } finally {
      await Promise.all([beater.$disconnect(), completer.$disconnect()]);
    }
    // The completion deleted the row at the expiry the heartbeat moved it to, not the one its snapshot saw.
    expect(await leaseRows()).toEqual([]);
  });

  it('leave the fence on the job row: a stale owner’s completion is refused and the new lease row stays', async () => {
    await enqueueJob(db.prisma, { jobType: 'lr.fence', payload: {} });
    const stale = await claimOne('lr.fence', 'w-stale');
    await expireLeases(db.prisma, stale.jobId);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toMatchObject({ retried: [stale.jobId] });
    const fresh = await claimOne('lr.fence', 'w-fresh');
    expect(fresh.attempt).toBe(2);

    const refused = await completeJob(db.prisma, { ...stale, output: 'late' }).catch((e: unknown) => e);
    expect(isRunledgerError(refused, 'job.lease_owner_mismatch')).toBe(true);
    const heartbeat = await heartbeatJob(db.prisma, stale).catch((e: unknown) => e);
    expect(isRunledgerError(heartbeat, 'job.lease_owner_mismatch')).toBe(true);
    expect((await leaseRows()).map((r) => [r.job_id, r.matches])).toEqual([[fresh.jobId, true]]);
    await completeJob(db.prisma, { ...fresh, output: 'on time' });
    expect(await leaseRows()).toEqual([]);
  });

  it('give the reaper expired leases oldest first, and keep the live ones', async () => {
    const jobs = await enqueueJobs(
      db.prisma,
      [1, 2, 3].map((n) => ({ jobType: 'lr.reap', payload: { n } })),
    );
    const claimed = await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['lr.reap'], limit: 3, leaseSeconds: 60, markRunning: true });
    expect(claimed).toHaveLength(3);
    const [first, second, live] = jobs.map((j) => j.jobId);
    await setLeaseExpiry(db.prisma, second!, '-2 minutes');
    await setLeaseExpiry(db.prisma, first!, '-1 minute');
    expect(await reapExpiredLeases(db.prisma, { limit: 1 })).toMatchObject({ retried: [second] });
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toMatchObject({ retried: [first] });
    expect((await leaseRows()).map((r) => r.job_id)).toEqual([live]);
  });

  it('hold a canceled job’s key until its lease runs out; the reaper then deletes the canceled row', async () => {
    const [a, b] = await enqueueJobs(
      db.prisma,
      [1, 2].map((n) => ({ jobType: 'lr.cancel', payload: { n }, resource: 'cancel-key' })),
    );
    const lease = await claimOne('lr.cancel');
    expect(lease.jobId).toBe(a!.jobId);
    await cancelJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId, reason: 'stop' });
    expect(await leaseRows()).toEqual([{ job_id: a!.jobId, resource_key: 'cancel-key', canceled: true, matches: true }]);
    // Its handler may still run: the key stays held, and the reaper leaves a canceled lease that has not run out.
    expect(await claimJobs(db.prisma, { workerId: 'w2', jobTypes: ['lr.cancel'], limit: 1, leaseSeconds: 60 })).toEqual([]);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [] });
    expect(await leaseRows()).toHaveLength(1);

    await expireLeases(db.prisma, a!.jobId);
    expect((await leaseRows())[0]).toMatchObject({ canceled: true, matches: true });
    expect((await claimOne('lr.cancel', 'w2')).jobId).toBe(b!.jobId);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [] });
    expect((await leaseRows()).map((r) => [r.job_id, r.canceled])).toEqual([[b!.jobId, false]]);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it('are checked both ways by verifyIntegrity', async () => {
    const jobs = await enqueueJobs(
      db.prisma,
      [1, 2, 3].map((n) => ({ jobType: 'lr.check', payload: { n }, organizationId: 'org-a' })),
    );
    await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['lr.check'], limit: 3, leaseSeconds: 60 });
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
    const [missing, moved, canceledRow] = jobs.map((j) => j.jobId);
    const orphan = '01900000-0000-7000-8000-0000000000aa';

    // A LEASED job without its row; a row that says another expiry than its job; an orphan row; a canceled row
    // inside its lease whose job is still LEASED.
    await db.prisma.$executeRaw`DELETE FROM runledger.job_leases WHERE job_id = ${missing}::uuid`;
    await db.prisma.$executeRaw`UPDATE runledger.job_leases SET expires_at = expires_at + interval '1 second' WHERE job_id = ${moved}::uuid`;
    await db.prisma.$executeRaw`INSERT INTO runledger.job_leases (expires_at, job_id) VALUES (now() + interval '1 minute', ${orphan}::uuid)`;
    await db.prisma.$executeRaw`UPDATE runledger.job_leases SET canceled = true WHERE job_id = ${canceledRow}::uuid`;

    const report = await verifyIntegrity(db.prisma, { scope: adminScope(), pageSize: 2 });
    const kinds = (kind: string) =>
      report.violations
        .filter((v) => v.kind === kind)
        .map((v) => v.jobId)
        .sort();
    expect(kinds('job.lease_row_missing')).toEqual([missing, moved, canceledRow].sort());
    expect(kinds('lease.job_mismatch')).toEqual([moved, canceledRow, orphan].sort());
    expect(report.violations.find((v) => v.jobId === orphan)).toMatchObject({
      kind: 'lease.job_mismatch',
      expected: { status: 'LEASED' },
      found: { jobExists: false },
    });
    expect(report.violations.filter((v) => !['job.lease_row_missing', 'lease.job_mismatch'].includes(v.kind))).toEqual([]);

    // An organization sees its own jobs' rows, not a row without a job.
    const scoped = await verifyIntegrity(db.prisma, { scope: organizationScope('org-a') });
    expect(
      scoped.violations
        .filter((v) => v.kind === 'lease.job_mismatch')
        .map((v) => v.jobId)
        .sort(),
    ).toEqual([moved, canceledRow].sort());
    const other = await verifyIntegrity(db.prisma, { scope: organizationScope('org-b') });
    expect(other.violations).toEqual([]);
  });
});
