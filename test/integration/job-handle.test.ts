/** jobHandle(...).getResult: waiting for one job's outcome, typed by its definition, scoped like getJob. */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { cancelJob, defineJob, enqueueJob, isRunledgerError, jobHandle, noOrganizationScope, organizationScope, TerminalError } from '../../src/index.js';
import { runUntilIdle } from '../../src/testing/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => ({ code: 'resolved' }) as { code: string; details?: Record<string, unknown> },
    (error: unknown) => (isRunledgerError(error) ? { code: error.code, details: error.details as Record<string, unknown> } : { code: String(error) }),
  );

const capture = defineJob('handle.capture', z.object({ invoiceId: z.string() }), async ({ invoiceId }, ctx) => ({
  receiptId: `r-${invoiceId}`,
  attempt: ctx.attempt,
  at: new Date(0),
}));
const declined = defineJob(
  'handle.declined',
  z.object({}),
  async () => {
    throw new TerminalError('card declined', { code: 'billing.declined' });
  },
  { retry: { maxAttempts: 1 } },
);

describe('job handles', () => {
  it("returns the succeeded job's output, typed by the definition", async () => {
    const { jobId } = await enqueueJob(db.prisma, capture, { invoiceId: 'i1' }, { organizationId: 'org_a' });
    const waiting = jobHandle(db.prisma, capture, { jobId, scope: organizationScope('org_a') }, { pollIntervalMs: 20 }).getResult({ timeoutMs: 20_000 });
    await runUntilIdle(db.prisma, [capture]);
    const receipt = await waiting;
    expectTypeOf(receipt).toEqualTypeOf<{ receiptId: string; attempt: number; at: string }>();
    expect(receipt).toEqual({ receiptId: 'r-i1', attempt: 1, at: new Date(0).toISOString() });
  });

  it("fails with job.result_dead_lettered carrying the job's last error code and message", async () => {
    const { jobId } = await enqueueJob(db.prisma, declined, {});
    await runUntilIdle(db.prisma, [declined]);
    const failure = await failureOf(jobHandle(db.prisma, { jobId, scope: noOrganizationScope() }).getResult({ timeoutMs: 1_000 }));
    expect(failure).toEqual({
      code: 'job.result_dead_lettered',
      details: { jobId, status: 'DEAD_LETTERED', lastErrorCode: 'billing.declined', lastErrorMessage: 'card declined' },
    });
  });

  it('fails with job.result_canceled for a canceled job', async () => {
    const { jobId } = await enqueueJob(db.prisma, capture, { invoiceId: 'i2' });
    await cancelJob(db.prisma, { jobId, scope: noOrganizationScope(), reason: 'customer request' });
    expect((await failureOf(jobHandle(db.prisma, capture, { jobId, scope: noOrganizationScope() }).getResult())).code).toBe('job.result_canceled');
  });

  it('gives up with job.result_wait_timeout while the job is still pending', async () => {
    const { jobId } = await enqueueJob(db.prisma, capture, { invoiceId: 'i3' });
    const failure = await failureOf(jobHandle(db.prisma, capture, { jobId, scope: noOrganizationScope() }).getResult({ timeoutMs: 100 }));
    expect(failure).toEqual({ code: 'job.result_wait_timeout', details: { jobId, status: 'PENDING' } });
  });

  it('stops waiting with job.result_wait_aborted when the signal aborts, well before the timeout', async () => {
    const { jobId } = await enqueueJob(db.prisma, capture, { invoiceId: 'i4' });
    const controller = new AbortController();
    const started = Date.now();
    const waiting = failureOf(
      jobHandle(db.prisma, capture, { jobId, scope: noOrganizationScope() }).getResult({ timeoutMs: 60_000, signal: controller.signal }),
    );
    controller.abort();
    expect((await waiting).code).toBe('job.result_wait_aborted');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("reports job.not_found for a job outside the handle's organization", async () => {
    const { jobId } = await enqueueJob(db.prisma, capture, { invoiceId: 'i5' }, { organizationId: 'org_a' });
    const elsewhere = jobHandle(db.prisma, capture, { jobId, scope: organizationScope('org_b') });
    expect((await failureOf(elsewhere.getResult({ timeoutMs: 1_000 }))).code).toBe('job.not_found');
    expect((await failureOf(jobHandle(db.prisma, { jobId, scope: noOrganizationScope() }).getJob())).code).toBe('job.not_found');
  });

  it('refuses a handle of one definition on a job of another type', async () => {
    const { jobId } = await enqueueJob(db.prisma, capture, { invoiceId: 'i6' });
    expect((await failureOf(jobHandle(db.prisma, declined, { jobId, scope: noOrganizationScope() }).getResult())).code).toBe('job.result_type_mismatch');
  });

  it('refuses a transaction client and bad options before reading anything', async () => {
    const ref = { jobId: '00000000-0000-7000-8000-000000000000', scope: noOrganizationScope() };
    await db.prisma.$transaction(async (tx) => {
      expect(() => jobHandle(tx as never, ref)).toThrow(expect.objectContaining({ code: 'job.handle_requires_root_client' }));
    });
    expect(() => jobHandle(db.prisma, ref, { pollIntervalMs: 0 })).toThrow(expect.objectContaining({ code: 'job.invalid_input', field: 'pollIntervalMs' }));
    expect((await failureOf(jobHandle(db.prisma, ref).getResult({ timeoutMs: -1 }))).code).toBe('job.invalid_input');
  });
});
