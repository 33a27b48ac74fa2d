/**
 * What a failed transactional attempt is recorded as, and the refusals of a
 * bad `transaction` setting (no database needed).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, TerminalError } from '../../src/worker/index.js';
import { transactionalFailure } from '../../src/worker/transactional-attempt.js';

const later = () => Date.now() + 60_000;

describe('transactionalFailure', () => {
  it("records Prisma's expired transaction as the job's timeout, not as an unavailable database", () => {
    const expired = Object.assign(
      new Error(
        'Transaction API error: A query cannot be executed on an expired transaction. The timeout for this transaction was 1000 ms, however 1203 ms passed since the start of the transaction.',
      ),
      { code: 'P2028' },
    );
    expect(transactionalFailure(expired, 1, later())).toMatchObject({ code: 'job.timeout', retryable: true, message: expect.stringContaining('expired') });
  });

  it('records a statement canceled by the statement timeout as the timeout', () => {
    const canceled = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    expect(transactionalFailure(canceled, 5, later())).toMatchObject({ code: 'job.timeout', retryable: true });
  });

  it('records any failure past the deadline as the timeout', () => {
    expect(transactionalFailure(new Error('whatever broke last'), 5, Date.now() - 1)).toMatchObject({ code: 'job.timeout' });
  });

  it("classifies the handler's own throws like a direct handler's", () => {
    // With the error's stack, which the failure's attempt keeps (as a direct handler's).
    const declined = transactionalFailure(new TerminalError('declined', { code: 'billing.declined' }), 5, later());
    expect(declined).toEqual({ code: 'billing.declined', message: 'declined', retryable: false, stack: expect.stringMatching(/^TerminalError: declined\n/) });
    expect(transactionalFailure(new Error('boom'), 5, later())).toEqual({
      code: 'job.handler_error',
      message: 'boom',
      retryable: true,
      stack: expect.stringMatching(/^Error: boom\n/),
    });
    // A closed transaction that did not expire is not a timeout.
    const closed = Object.assign(new Error('Transaction API error: Transaction already closed: A query cannot be executed on a committed transaction.'), {
      code: 'P2028',
    });
    expect(transactionalFailure(closed, 5, later())).toMatchObject({ code: 'job.handler_error' });
  });
});

describe('defineJob({ transaction })', () => {
  const handler = async () => 1;
  it('refuses a transaction client: the worker opens the transaction on a root client', () => {
    const txClient = { $queryRaw: async () => [], $executeRaw: async () => 0, $transaction: async () => undefined };
    expect(() => defineJob('t.tx_client', z.object({}), handler, { transaction: txClient as never })).toThrow(
      expect.objectContaining({ code: 'worker.invalid_job_definition', field: 'settings.transaction' }),
    );
  });

  it('refuses something that is not a Prisma client', () => {
    expect(() => defineJob('t.not_client', z.object({}), handler, { transaction: {} as never })).toThrow(
      expect.objectContaining({ code: 'worker.invalid_job_definition', field: 'settings.transaction' }),
    );
  });

  it('keeps the client on the definition; a direct definition has none', () => {
    const root = { $queryRaw: async () => [], $executeRaw: async () => 0, $transaction: async () => undefined, $connect: async () => undefined };
    expect(defineJob('t.root', z.object({}), handler, { transaction: root as never }).transaction).toBe(root);
    expect(defineJob('t.direct', z.object({}), handler).transaction).toBeUndefined();
  });
});
