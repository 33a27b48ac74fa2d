/** `runledger jobs list` and `jobs cancel`: the library's listJobs and cancelJob from the command line. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimJobs, enqueueJob, enqueueJobs, failJob, getJob, noOrganizationScope } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

describe('runledger jobs list', () => {
  it('pages through jobs newest first with --limit and --cursor, in text and JSON', async () => {
    const created = await enqueueJobs(
      db.prisma,
      Array.from({ length: 5 }, (_, i) => ({ jobType: 'cli.jobs.page', payload: i })),
    );
    const newestFirst = created.map((c) => c.jobId).reverse();

    const first = await cli('jobs', 'list', '--type', 'cli.jobs.page', '--limit', '2');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/ID\s+TYPE\s+STATUS/);
    const cursor = /more: --cursor (\S+)/.exec(first.stdout)?.[1];
    expect(cursor).toBe(newestFirst[1]);

    const seen: string[] = [];
    let next: string | null = null;
    do {
      const page = await cli('--json', 'jobs', 'list', '--type', 'cli.jobs.page', '--limit', '2', ...(next ? ['--cursor', next] : []));
      expect(page.code).toBe(0);
      const body = JSON.parse(page.stdout) as { items: { id: string; jobType: string }[]; nextCursor: string | null };
      seen.push(...body.items.map((job) => job.id));
      next = body.nextCursor;
    } while (next);
    expect(seen).toEqual(newestFirst);
  });

  it('filters by status and by organization, and says when nothing matches', async () => {
    const org = 'acme-42';
    const mine = await enqueueJob(db.prisma, { jobType: 'cli.jobs.filter', payload: 1, organizationId: org });
    const plain = await enqueueJob(db.prisma, { jobType: 'cli.jobs.filter', payload: 2 });
    await claimJobs(db.prisma, { workerId: 'w', limit: 10, leaseSeconds: 60, jobTypes: ['cli.jobs.filter'] });
    const leased = JSON.parse((await cli('--json', 'jobs', 'list', '--type', 'cli.jobs.filter', '--status', 'LEASED')).stdout) as { items: { id: string }[] };
    expect(leased.items.map((job) => job.id).sort()).toEqual([mine.jobId, plain.jobId].sort());

    const inOrg = JSON.parse((await cli('--json', '--org', org, 'jobs', 'list', '--type', 'cli.jobs.filter')).stdout) as {
      items: { id: string; organizationId: string }[];
    };
    expect(inOrg.items.map((job) => [job.id, job.organizationId])).toEqual([[mine.jobId, org]]);
    const withoutOrg = JSON.parse((await cli('--json', '--without-org', 'jobs', 'list', '--type', 'cli.jobs.filter')).stdout) as { items: { id: string }[] };
    expect(withoutOrg.items.map((job) => job.id)).toEqual([plain.jobId]);

    expect((await cli('jobs', 'list', '--type', 'cli.jobs.filter', '--status', 'PENDING')).stdout).toContain('No jobs.');
  });

  it('refuses a bad status, limit or cursor as usage errors (exit 2) naming the field', async () => {
    const status = await cli('--json', 'jobs', 'list', '--status', 'DONE');
    expect(status.code).toBe(2);
    expect(JSON.parse(status.stderr)).toMatchObject({ code: 'job.invalid_input', details: { field: 'status.0' } });
    expect((await cli('jobs', 'list', '--limit', '0')).code).toBe(2);
    const cursor = await cli('--json', 'jobs', 'list', '--cursor', 'page-2');
    expect(cursor.code).toBe(2);
    expect(JSON.parse(cursor.stderr)).toMatchObject({ code: 'job.invalid_input', details: { field: 'cursor' } });
  });
});

describe('runledger jobs cancel', () => {
  it('cancels a pending job with a reason; again is a no-op; a finished job is a conflict, a missing one not found', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.jobs.cancel', payload: {} });
    const cancel = await cli('jobs', 'cancel', jobId, '--reason', 'customer request');
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain(`Job ${jobId} is CANCELED.`);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'CANCELED' });

    const again = await cli('--json', 'jobs', 'cancel', jobId);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: jobId, status: 'CANCELED' });

    const dead = await enqueueJob(db.prisma, { jobType: 'cli.jobs.dead', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['cli.jobs.dead'] });
    await failJob(db.prisma, { ...lease!, error: { code: 'x.fatal', message: 'no' }, retryable: false });
    const conflict = await cli('--json', 'jobs', 'cancel', dead.jobId);
    expect(conflict.code).toBe(4);
    expect(JSON.parse(conflict.stderr)).toMatchObject({ code: 'job.not_cancelable', category: 'conflict' });
    expect((await cli('jobs', 'cancel', newId())).code).toBe(3);
  });

  it('refuses an empty or blank text option of a command that changes rows, and changes nothing', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.jobs.blank', payload: {} });
    const attempts: [string[], string][] = [
      [['jobs', 'cancel', jobId, '--reason', ''], '--reason'],
      [['jobs', 'cancel', jobId, '--reason', '  '], '--reason'],
      [['runs', 'cancel', newId(), '--reason', ''], '--reason'],
      [['runs', 'recover', newId(), '--request-key', ' ', '--reason', 'r'], '--request-key'],
      [['jobs', 'list', '--type', ''], '--type'],
    ];
    for (const [args, field] of attempts) {
      const result = await cli('--json', ...args);
      expect([result.code, JSON.parse(result.stderr)], args.join(' ')).toEqual([
        2,
        expect.objectContaining({ code: 'cli.invalid_argument', details: { field } }),
      ]);
    }
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'PENDING' });
  });

  it('cancels only within the given organization', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.jobs.cancel.org', payload: {}, organizationId: '1001' });
    expect((await cli('--org', '1002', 'jobs', 'cancel', jobId)).code).toBe(3);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId }).catch((e: unknown) => e)).toMatchObject({ code: 'job.not_found' });
    expect((await cli('--org', '1001', 'jobs', 'cancel', jobId)).code).toBe(0);
  });
});
