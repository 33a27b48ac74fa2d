/**
 * A handler's output or error that PostgreSQL cannot store is still recorded,
 * with its real cause: an unstorable output is a terminal `job.output_invalid`
 * naming where and why; an error message or code with NUL or lone surrogates
 * is sanitised (U+FFFD) and cut to the column's limit, never left unrecorded
 * to re-run and dead-letter as `job.lease_expired`.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, getJob, noOrganizationScope } from '../../src/index.js';
import { defineJob, RetryableError, TerminalError } from '../../src/worker/index.js';
import { textProblem } from '../../src/validation/storable.js';
import { nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

async function runOnce(jobType: string, handler: () => Promise<unknown>, maxAttempts = 5) {
  const worker = await startWorker({ handlers: [defineJob(jobType, z.object({}), handler as never)] });
  const failed = nextEvent(worker, 'job:failure');
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: {}, maxAttempts });
  const event = await failed;
  return { event, job: await getJob(db.prisma, { scope: noOrganizationScope(), jobId }) };
}

describe('unstorable handler results', () => {
  it('dead-letters an output holding NUL as job.output_invalid, naming the member and why', async () => {
    const { event, job } = await runOnce('storable.output_nul', async () => ({ receipt: { note: 'paid\u0000' } }));
    expect(event).toMatchObject({ code: 'job.output_invalid', retryable: false, status: 'DEAD_LETTERED' });
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', attempt: 1, lastErrorCode: 'job.output_invalid', output: null });
    expect(job.lastErrorMessage).toContain('output.receipt.note');
    expect(job.lastErrorMessage).toContain('contains NUL');
  });

  it('dead-letters an output with a lone surrogate in a key, and one nested 5,000 deep, with the reason', async () => {
    const surrogate = await runOnce('storable.output_key', async () => ({ 'k\uD800': 1 }));
    expect(surrogate.job).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.output_invalid' });
    expect(surrogate.job.lastErrorMessage).toMatch(/output\.k\uFFFD: .*key that contains a lone surrogate/);

    const deep = await runOnce('storable.output_deep', async () => {
      let value: unknown = 1;
      for (let i = 0; i < 5_000; i += 1) value = { a: value };
      return value;
    });
    expect(deep.job).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.output_invalid' });
    expect(deep.job.lastErrorMessage).toMatch(/nested deeper than 256 levels/);
  });

  it('records a TerminalError whose message and code hold NUL, sanitised, at once', async () => {
    const { event, job } = await runOnce('storable.terminal_nul', async () => {
      throw new TerminalError('card\u0000declined', { code: 'billing.\u0000declined' });
    });
    expect(event).toMatchObject({ code: 'billing.\uFFFDdeclined', status: 'DEAD_LETTERED' });
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', attempt: 1, lastErrorCode: 'billing.\uFFFDdeclined', lastErrorMessage: 'card\uFFFDdeclined' });
  });

  it('records a thrown message with lone surrogates, cut to 4,000 units without splitting a pair', async () => {
    // 3,999 units, then a surrogate pair straddling the limit, then a lone low surrogate.
    const message = `${'x'.repeat(3_999)}😀\uDC00${'y'.repeat(50)}`;
    const { job } = await runOnce('storable.retry_long', async () => {
      throw new RetryableError(`\uD800${message}`);
    });
    expect(job).toMatchObject({ status: 'PENDING', lastErrorCode: 'job.retry_requested' });
    expect(job.lastErrorMessage).toBe(`\uFFFD${'x'.repeat(3_999)}`);
    expect(textProblem(job.lastErrorMessage!)).toBeUndefined();
  });

  it('records an unknown throw that JSON cannot describe (5,000 deep, no prototype)', async () => {
    let deep: unknown = {};
    for (let i = 0; i < 5_000; i += 1) deep = { a: deep };
    const first = await runOnce(
      'storable.throw_deep',
      async () => {
        throw deep;
      },
      1,
    );
    expect(first.job).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.handler_error', lastErrorMessage: '[object Object]' });

    const second = await runOnce(
      'storable.throw_bare',
      async () => {
        throw Object.assign(Object.create(null), { self: undefined }) as unknown;
      },
      1,
    );
    expect(second.job).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.handler_error' });
  });

  it('records a payload refusal whose schema message holds NUL, sanitised', async () => {
    const worker = await startWorker({
      handlers: [defineJob('storable.payload_msg', z.object({ n: z.number({ error: 'bad\u0000number' }) }), async () => null)],
    });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'storable.payload_msg', payload: { n: 'x' } });
    await failed;
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'DEAD_LETTERED',
      lastErrorCode: 'job.payload_invalid',
      lastErrorMessage: 'Invalid payload.n: bad\uFFFDnumber',
    });
  });
});
