/**
 * Bulk requeue of dead letters (src/replay/bulk-requeue.ts): only matching
 * dead-lettered direct jobs in the exact scope, at most the cap, each with a
 * REQUEUED event carrying the one operation id and reason; rows another
 * transaction holds are skipped, not waited for; bad input writes nothing.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  adminScope,
  claimJobs,
  countDeadLetteredJobs,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  listJobEvents,
  organizationScope,
  requeueDeadLetteredJobs,
  verifyIntegrity,
  workflow,
} from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

afterEach(() => vi.restoreAllMocks());

/** Enqueues `count` jobs of `jobType` and dead-letters each with `code`; returns their ids in enqueue order. */
async function deadLetters(jobType: string, count: number, code: string, organizationId: string | null = null): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n += 1) ids.push((await enqueueJob(db.prisma, { jobType, organizationId, payload: { n } })).jobId);
  const leases = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: count, leaseSeconds: 60, markRunning: true });
  // Failed in enqueue order, so their finish times follow it.
  for (const id of ids) {
    const lease = leases.find((candidate) => candidate.jobId === id)!;
    await failJob(db.prisma, { ...lease, error: { code, message: `${code} happened` }, retryable: false });
  }
  return ids;
}

async function statusOf(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (jobId) => (await getJob(db.prisma, { scope: adminScope(), jobId })).status));
}

describe('requeueDeadLetteredJobs', () => {
  it('requeues the matching dead letters only, oldest first, up to the cap, as one operation in every trail', async () => {
    const smtp = await deadLetters('bulk.mail', 3, 'smtp.down');
    const other = await deadLetters('bulk.mail', 1, 'template.missing');
    const otherType = await deadLetters('bulk.sms', 1, 'smtp.down');

    expect(await countDeadLetteredJobs(db.prisma, { scope: adminScope(), filter: { jobType: 'bulk.mail', errorCode: 'smtp.down' } })).toEqual({
      count: 3,
      more: false,
    });
    expect(await countDeadLetteredJobs(db.prisma, { scope: adminScope(), filter: { jobType: 'bulk.mail' }, max: 2 })).toEqual({ count: 2, more: true });

    const first = await requeueDeadLetteredJobs(db.prisma, {
      scope: adminScope(),
      filter: { jobType: 'bulk.mail', errorCode: 'smtp.down' },
      limit: 2,
      reason: 'relay back after incident 4411',
    });
    expect(first.jobIds).toEqual(smtp.slice(0, 2));
    expect(first.more).toBe(true);
    expect(await statusOf(smtp)).toEqual(['PENDING', 'PENDING', 'DEAD_LETTERED']);
    expect(await statusOf([...other, ...otherType])).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED']);

    const job = await getJob(db.prisma, { scope: adminScope(), jobId: smtp[0]! });
    expect(job).toMatchObject({ runNumber: 2, attempt: 0, lastErrorCode: null, finishedAt: null });
    const events = (await listJobEvents(db.prisma, { scope: adminScope(), jobId: smtp[0]! })).items;
    expect(events.at(-1)).toMatchObject({
      eventType: 'REQUEUED',
      runNumber: 2,
      payload: {
        previousRunNumber: 1,
        previousStatus: 'DEAD_LETTERED',
        previousErrorCode: 'smtp.down',
        operationId: first.operationId,
        reason: 'relay back after incident 4411',
        filter: { jobType: 'bulk.mail', errorCode: 'smtp.down' },
        statePolicy: 'preserve_progress_and_checkpoint',
      },
    });
    // The operation's jobs are found again by its id.
    const [found] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_events WHERE event_type = 'REQUEUED' AND payload->>'operationId' = ${first.operationId}`;
    expect(found!.n).toBe(2);

    const rest = await requeueDeadLetteredJobs(db.prisma, {
      scope: adminScope(),
      filter: { jobType: 'bulk.mail', errorCode: 'smtp.down' },
      limit: 10,
      reason: 'the rest',
    });
    expect(rest.jobIds).toEqual([smtp[2]]);
    expect(rest.more).toBe(false);
    expect(rest.operationId).not.toBe(first.operationId);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it("takes only the scope's own organization, and never a workflow step's job", async () => {
    const mine = await deadLetters('bulk.scoped', 2, 'x.failed', 'org-a');
    const theirs = await deadLetters('bulk.scoped', 2, 'x.failed', 'org-b');
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('bulk.flow').job('only', 'bulk.scoped', {}).build());
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['bulk.scoped'], limit: 1, leaseSeconds: 60, markRunning: true });
    await failJob(db.prisma, { ...lease!, error: { code: 'x.failed', message: 'step failed' }, retryable: false });
    expect(workflowRunId).toBeTruthy();

    expect((await countDeadLetteredJobs(db.prisma, { scope: organizationScope('org-a'), filter: { jobType: 'bulk.scoped' } })).count).toBe(2);
    const result = await requeueDeadLetteredJobs(db.prisma, {
      scope: organizationScope('org-a'),
      filter: { jobType: 'bulk.scoped' },
      limit: 100,
      reason: 'tenant retry',
    });
    expect(result.jobIds.sort()).toEqual([...mine].sort());
    expect(await statusOf(theirs)).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED']);
    const admin = await requeueDeadLetteredJobs(db.prisma, { scope: adminScope(), filter: { jobType: 'bulk.scoped' }, limit: 100, reason: 'all tenants' });
    // The workflow step's dead job stays: a failed run is recovered as a whole.
    expect(admin.jobIds.sort()).toEqual([...theirs].sort());
    const [stepJob] = await db.prisma.$queryRaw<{ status: string }[]>`SELECT status::text FROM runledger.job_queue WHERE id = ${lease!.jobId}::uuid`;
    expect(stepJob!.status).toBe('DEAD_LETTERED');
  });

  it('skips a dead letter another transaction holds instead of waiting for it', async () => {
    const ids = await deadLetters('bulk.locked', 2, 'y.failed');
    const held = barrier(2);
    const done = barrier(2);
    const holder = db.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM runledger.job_queue WHERE id = ${ids[0]!}::uuid FOR UPDATE`;
      await held();
      await done();
    });
    await held();
    try {
      const result = await requeueDeadLetteredJobs(db.prisma, { scope: adminScope(), filter: { jobType: 'bulk.locked' }, limit: 10, reason: 'while held' });
      expect(result.jobIds).toEqual([ids[1]]);
      // The held row still matches: the answer says so.
      expect(result.more).toBe(true);
    } finally {
      await done();
      await holder;
    }
    expect(await statusOf(ids)).toEqual(['DEAD_LETTERED', 'PENDING']);
  });

  it('refuses bad input naming the field, and writes nothing', async () => {
    const ids = await deadLetters('bulk.invalid', 1, 'z.failed');
    const attempts: [Record<string, unknown>, string][] = [
      [{ limit: 0 }, 'limit'],
      [{ limit: 1_001 }, 'limit'],
      [{ reason: '   ' }, 'reason'],
      [{ filter: { jobType: 'bulk.invalid', errorCode: '' } }, 'filter.errorCode'],
      [{ statePolicy: 'keep' }, 'statePolicy'],
      // A blank or unknown filter field, or a time as text, never reads as no filter.
      [{ filter: { jobType: ' \t ' } }, 'filter.jobType'],
      [{ filter: { jobType: 'bulk.invalid', after: new Date() } }, 'filter.after'],
      [{ filter: { jobType: 'bulk.invalid', finishedAfter: '1' } }, 'filter.finishedAfter'],
      // A scope kind with a field it does not take: admin with an organization is neither, not every tenant.
      [{ scope: { kind: 'admin', organizationId: 'acme' } }, 'scope.organizationId'],
      [{ scope: { kind: 'no_organization', organizationId: 'acme' } }, 'scope.organizationId'],
    ];
    for (const [change, field] of attempts) {
      const input = { scope: adminScope(), filter: { jobType: 'bulk.invalid' }, limit: 10, reason: 'r', ...change };
      await expect(requeueDeadLetteredJobs(db.prisma, input as never)).rejects.toMatchObject({
        code: 'job.invalid_input',
        details: expect.objectContaining({ field }),
      });
    }
    expect(await statusOf(ids)).toEqual(['DEAD_LETTERED']);
  });
});

describe('runledger jobs requeue-dead-letters', () => {
  it('counts with --dry-run, requires a limit and a reason, and requeues as one operation', async () => {
    const ids = await deadLetters('bulk.cli', 3, 'cli.failed');
    const dry = await runCli(db.url, 'jobs', 'requeue-dead-letters', '--type', 'bulk.cli', '--dry-run');
    expect([dry.code, dry.stdout.trim()]).toEqual([0, '3 dead-lettered job(s) match.']);
    const noReason = await runCli(db.url, 'jobs', 'requeue-dead-letters', '--type', 'bulk.cli', '--limit', '2');
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--reason is required');
    expect(await statusOf(ids)).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED', 'DEAD_LETTERED']);
    const done = await runCli(db.url, '--json', 'jobs', 'requeue-dead-letters', '--type', 'bulk.cli', '--limit', '2', '--reason', 'from the shell');
    expect(done.code).toBe(0);
    const body = JSON.parse(done.stdout) as { operationId: string; jobIds: string[]; more: boolean };
    expect(body).toMatchObject({ jobIds: ids.slice(0, 2), more: true });
    expect(await statusOf(ids)).toEqual(['PENDING', 'PENDING', 'DEAD_LETTERED']);
  });

  it('refuses an empty or blank filter option and a time not in ISO 8601, naming the option, and requeues nothing', async () => {
    const ids = await deadLetters('bulk.cli.blank', 2, 'cli.failed');
    const refusals: [string[], string][] = [
      [['--type', ''], '--type'],
      [['--type', '   '], '--type'],
      [['--error-code', ''], '--error-code'],
      [['--error-code', '\t'], '--error-code'],
      [['--after', '1'], '--after'],
      [['--after', ''], '--after'],
      [['--before', '2026-02-30'], '--before'],
      [['--before', '2026-12-01T09:30'], '--before'],
      [['--reason', ' '], '--reason'],
    ];
    for (const [option, field] of refusals) {
      const args = ['--limit', '10', '--reason', 'unset variable', ...option];
      const result = await runCli(db.url, '--json', 'jobs', 'requeue-dead-letters', ...args);
      expect([result.code, JSON.parse(result.stderr)], args.join(' ')).toEqual([
        2,
        expect.objectContaining({ code: 'cli.invalid_argument', details: { field } }),
      ]);
      // Human output names the option too.
      expect((await runCli(db.url, 'jobs', 'requeue-dead-letters', ...args)).stderr).toContain(`'${field} <`);
    }
    expect(await statusOf(ids)).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED']);
    const dated = await runCli(
      db.url,
      'jobs',
      'requeue-dead-letters',
      '--type',
      'bulk.cli.blank',
      '--after',
      '2000-01-01',
      '--before',
      '9999-01-01T00:00:00Z',
      '--dry-run',
    );
    expect([dated.code, dated.stdout.trim()]).toEqual([0, '2 dead-lettered job(s) match.']);
  });
});
