import { describe, expect, it } from 'vitest';
import { claimJobs, completeJob, enqueueJob, getJob, noOrganizationScope, type Job } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { compareAndReplaySucceededJob, type CompareAndReplaySucceededJobResult } from '../../src/replay/index.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

async function succeededJob(jobType: string): Promise<Job> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: { n: 1 } });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
  await completeJob(db.prisma, { ...lease!, output: 'done' });
  return getJob(db.prisma, { scope: noOrganizationScope(), jobId });
}

function request(source: Job, reason = 'same reason') {
  return { scope: noOrganizationScope(), sourceJobId: source.id, expectedRunNumber: 1, replayRequestKey: 'k', reason };
}

/** A latch opened by hand. */
function latch(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
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

async function jobCount(jobType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType}`;
  return row!.n;
}

function replayOf(result: CompareAndReplaySucceededJobResult) {
  if (result.kind !== 'replayed') throw new Error(`expected a replay, got ${result.kind}`);
  return result.replay;
}

describe('concurrent compareAndReplaySucceededJob', () => {
  it('inserts exactly one job for two concurrent replays with the same key and reason', async () => {
    const source = await succeededJob('concurrent.same');
    const clients = [db.newClient({ max: 1 }), db.newClient({ max: 1 })];
    const arrive = barrier(2);
    const results = await Promise.all(
      clients.map((client) =>
        client.$transaction(async (tx) => {
          await tx.$queryRaw`SELECT 1`;
          await arrive();
          return compareAndReplaySucceededJob(tx, request(source));
        }),
      ),
    );
    const replays = results.map(replayOf);
    expect(replays.map((r) => r.disposition).sort()).toEqual(['existing', 'inserted']);
    expect(replays[0]!.jobId).toBe(replays[1]!.jobId);
    expect(await jobCount('concurrent.same')).toBe(2);
  });

  it('answers existing after waiting on the source lock of a replay that then commits', async () => {
    const source = await succeededJob('concurrent.wait');
    const replayed = latch();
    const first = latch();
    const holder = db.newClient({ max: 1 }).$transaction(async (tx) => {
      const result = await compareAndReplaySucceededJob(tx, request(source));
      replayed.open();
      await first.wait;
      return result;
    });
    await replayed.wait;
    const second = compareAndReplaySucceededJob(db.newClient({ max: 1 }), request(source));
    await lockWaiters(1);
    first.open();
    const [inserted, existing] = await Promise.all([holder, second]);
    expect(replayOf(inserted)).toMatchObject({ disposition: 'inserted' });
    expect(replayOf(existing)).toEqual({ ...replayOf(inserted), disposition: 'existing' });
    expect(await jobCount('concurrent.wait')).toBe(2);
  });

  it('refuses another reason after waiting on the source lock of a replay that then commits', async () => {
    const source = await succeededJob('concurrent.conflict');
    const replayed = latch();
    const first = latch();
    const holder = db.newClient({ max: 1 }).$transaction(async (tx) => {
      const result = await compareAndReplaySucceededJob(tx, request(source, 'one'));
      replayed.open();
      await first.wait;
      return result;
    });
    await replayed.wait;
    const second = compareAndReplaySucceededJob(db.newClient({ max: 1 }), request(source, 'two')).catch((e) => e);
    await lockWaiters(1);
    first.open();
    expect(replayOf(await holder)).toMatchObject({ disposition: 'inserted' });
    expect(await second).toMatchObject({ code: 'job.replay_idempotency_conflict' });
    expect(await jobCount('concurrent.conflict')).toBe(2);
  });

  it('inserts after waiting on the source lock of a replay that then rolls back', async () => {
    const source = await succeededJob('concurrent.rollback');
    const replayed = latch();
    const first = latch();
    const holder = db
      .newClient({ max: 1 })
      .$transaction(async (tx) => {
        await compareAndReplaySucceededJob(tx, request(source));
        replayed.open();
        await first.wait;
        throw new Error('caller changed its mind');
      })
      .catch((e: Error) => e.message);
    await replayed.wait;
    const second = compareAndReplaySucceededJob(db.newClient({ max: 1 }), request(source));
    await lockWaiters(1);
    first.open();
    expect(await holder).toBe('caller changed its mind');
    expect(replayOf(await second)).toMatchObject({ disposition: 'inserted' });
    expect(await jobCount('concurrent.rollback')).toBe(2);
  });

  it('answers with a lineage row a writer committed without taking the source lock', async () => {
    const source = await succeededJob('concurrent.bypass');
    const pool = db.newPool({ max: 1 });
    const writer = await pool.connect();
    const theirs = newId();
    try {
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO runledger.job_queue (id, job_type, payload) VALUES ($1, 'concurrent.bypass', '{}')`, [theirs]);
      await writer.query(
        `INSERT INTO runledger.job_replays (source_job_id, source_run_number, replay_request_key, replay_job_id, reason)
         VALUES ($1, 1, 'k', $2, 'same reason')`,
        [source.id, theirs],
      );
      const ours = compareAndReplaySucceededJob(db.newClient({ max: 1 }), request(source));
      await lockWaiters(1);
      await writer.query('COMMIT');
      expect(replayOf(await ours)).toEqual({ jobId: theirs, status: 'PENDING', runNumber: 1, disposition: 'existing' });
    } finally {
      writer.release();
    }
    expect(await jobCount('concurrent.bypass')).toBe(2);
    const [events] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_trail e JOIN runledger.job_queue jq ON jq.id = e.job_id
       WHERE jq.job_type = 'concurrent.bypass' AND e.event_type = 'ENQUEUED' AND e.payload IS NOT NULL`;
    expect(events!.n).toBe(0);
  });
});
