import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConflictError, RunledgerError, ValidationError, isRunledgerError } from '../../src/index.js';
import { parseInput } from '../../src/validation/parse.js';
import { jsonProblem, jsonValue, requestKey } from '../../src/validation/primitives.js';
import { databaseErrorInfo, normalizeDatabaseError } from '../../src/errors/database-error.js';

describe('RunledgerError', () => {
  it('carries category, code, client-safe message and a separate internal message', () => {
    const error = new ConflictError('job.idempotency_conflict', 'Key already used for another request.', {
      internalMessage: 'enqueue: key k1 maps to job 0190...',
      details: { key: 'k1' },
    });
    expect(error).toBeInstanceOf(RunledgerError);
    expect(error.name).toBe('ConflictError');
    expect(error.category).toBe('conflict');
    expect(isRunledgerError(error, 'job.idempotency_conflict')).toBe(true);
    expect(isRunledgerError(error, 'job.not_found')).toBe(false);
    expect(error.toJSON()).toEqual({
      name: 'ConflictError',
      code: 'job.idempotency_conflict',
      category: 'conflict',
      message: 'Key already used for another request.',
      details: { key: 'k1' },
    });
    expect(JSON.stringify(error)).not.toContain('0190');
  });
});

describe('database error normalisation', () => {
  const prismaRawError = (code: string, message: string) =>
    Object.assign(new Error('Invalid `prisma.$queryRaw()` invocation: Raw query failed.'), {
      name: 'PrismaClientKnownRequestError',
      code: 'P2010',
      meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: code, originalMessage: message, kind: 'postgres' } } },
    });

  it('reads the SQLSTATE from a Prisma driver-adapter error and from a pg error', () => {
    expect(databaseErrorInfo(prismaRawError('23505', 'duplicate key'))).toEqual({ sqlState: '23505', message: 'duplicate key' });
    expect(databaseErrorInfo(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toEqual({ sqlState: '40P01', message: 'deadlock detected' });
    expect(databaseErrorInfo({ code: 'P2034', message: 'write conflict' }).sqlState).toBe('40001');
  });

  it.each([
    ['40001', 'conflict', 'database.transaction_conflict'],
    ['40P01', 'conflict', 'database.transaction_conflict'],
    ['55P03', 'unavailable', 'database.timeout'],
    ['57014', 'unavailable', 'database.timeout'],
    ['08006', 'unavailable', 'database.unavailable'],
    ['23514', 'internal', 'database.error'],
  ])('maps SQLSTATE %s to %s/%s without leaking the server message', (sqlState, category, code) => {
    const error = normalizeDatabaseError(prismaRawError(sqlState, 'relation "runledger.secret" says no'), 'claim jobs');
    expect(error.category).toBe(category);
    expect(error.code).toBe(code);
    expect(error.message).not.toContain('secret');
    expect(error.internalMessage).toContain('claim jobs');
    expect(error.internalMessage).toContain(sqlState);
  });
});

describe('input validation', () => {
  const schema = z.object({ jobType: z.string().min(1), nested: z.object({ items: z.array(z.number().int()) }) });

  it('names the offending field as a dotted path', () => {
    const error = (() => {
      try {
        parseInput(schema, { jobType: 'x', nested: { items: [1, 2.5] } }, 'job.invalid_input');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('job.invalid_input');
    expect((error as ValidationError).field).toBe('nested.items.1');
    expect((error as ValidationError).category).toBe('validation');
    expect((error as ValidationError).message).toContain('nested.items.1');
  });

  it('says which field is invalid once, in words of its own (zod\'s "Invalid input: " lead was repeated before)', () => {
    const strict = z.strictObject({ n: z.number(), mode: z.enum(['a', 'b']).optional() });
    const refusal = (input: unknown, root?: string) => {
      try {
        parseInput(strict, input, 'job.invalid_input', root);
      } catch (e) {
        return { field: (e as ValidationError).field, message: (e as ValidationError).message };
      }
      throw new Error('accepted');
    };
    expect(refusal(undefined)).toEqual({ field: 'input', message: 'Invalid input: must be an object (received undefined)' });
    expect(refusal(undefined, 'options')).toEqual({ field: 'options', message: 'Invalid options: must be an object (received undefined)' });
    expect(refusal({ n: '1' })).toEqual({ field: 'n', message: 'Invalid n: must be a number (received string)' });
    expect(refusal({ n: 1, mode: 'c' })).toEqual({ field: 'mode', message: 'Invalid mode: must be one of "a"|"b"' });
    // An unknown key is named itself, not the object that holds it.
    expect(refusal({ n: 1, nn: 2 })).toEqual({ field: 'nn', message: 'Invalid nn: is not a known field' });
  });

  it('accepts plain JSON and rejects what JSON cannot carry', () => {
    expect(jsonProblem({ a: [1, 'x', null, true, { b: 2 }] })).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(jsonProblem(cyclic)).toBe('self: contains a cycle');
    expect(jsonProblem({ a: undefined })).toBe('a: undefined is not JSON');
    expect(jsonProblem(10n)).toBe('a bigint is not JSON');
    expect(jsonProblem(Number.NaN)).toBe('numbers must be finite');
    expect(jsonProblem(new Date())).toBe('only plain objects are JSON');
    expect(jsonProblem(() => 1)).toBe('a function is not JSON');
    expect(jsonValue.safeParse({ shared: [1], again: [1] }).success).toBe(true);
  });

  it('measures request keys in UTF-8 bytes', () => {
    expect(requestKey.safeParse('a'.repeat(512)).success).toBe(true);
    expect(requestKey.safeParse('é'.repeat(256)).success).toBe(true);
    expect(requestKey.safeParse('é'.repeat(257)).success).toBe(false);
    expect(requestKey.safeParse('   ').success).toBe(false);
  });
});
