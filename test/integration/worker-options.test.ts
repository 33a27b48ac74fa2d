import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ValidationError } from '../../src/index.js';
import { createWorker, defineJob, silentLogger, type WorkerOptions } from '../../src/worker/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const noop = defineJob('opts.noop', z.object({}), async () => null);

function invalid(options: unknown): ValidationError {
  try {
    createWorker(options as WorkerOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('createWorker accepted invalid options');
}

describe('createWorker options', () => {
  it('refuses a transaction client as db', async () => {
    await db.prisma.$transaction(async (tx) => {
      const error = invalid({ db: tx, handlers: [noop], logger: silentLogger });
      expect(error).toMatchObject({ code: 'worker.invalid_options', field: 'db' });
      expect(error.message).toMatch(/root Prisma client/);
    });
  });

  it('wants exactly one of db and connectionString', () => {
    expect(invalid({ handlers: [noop] })).toMatchObject({ code: 'worker.invalid_options', field: 'db' });
    expect(invalid({ db: db.prisma, connectionString: db.url, handlers: [noop] })).toMatchObject({ field: 'db' });
    // A malformed URL is the caller's input, not a connection failure to retry.
    expect(invalid({ connectionString: 'not a url', handlers: [noop] })).toMatchObject({ code: 'worker.invalid_options', field: 'connectionString' });
    expect(invalid({ db: db.prisma, listenConnectionString: 'mysql://h/db', handlers: [noop] })).toMatchObject({
      code: 'worker.invalid_options',
      field: 'listenConnectionString',
    });
  });

  it('refuses a handler list that is empty, not made by defineJob, or names a job type twice', () => {
    expect(invalid({ db: db.prisma, handlers: [] })).toMatchObject({ field: 'handlers' });
    expect(invalid({ db: db.prisma, handlers: [{ jobType: 'x', schema: z.object({}), handler: async () => null }] })).toMatchObject({
      field: 'handlers.0',
    });
    const twin = defineJob('opts.noop', z.object({}), async () => 'twin');
    expect(invalid({ db: db.prisma, handlers: [noop, twin] })).toMatchObject({ field: 'handlers.1' });
  });

  it('names the offending numeric option', () => {
    expect(invalid({ db: db.prisma, handlers: [noop], concurrency: 0 })).toMatchObject({ field: 'concurrency' });
    expect(invalid({ db: db.prisma, handlers: [noop], heartbeatFraction: 1 })).toMatchObject({ field: 'heartbeatFraction' });
    expect(invalid({ db: db.prisma, handlers: [noop], completionBatchSize: 0 })).toMatchObject({ field: 'completionBatchSize' });
    expect(invalid({ db: db.prisma, handlers: [noop], completionBatchSize: 1001 })).toMatchObject({ field: 'completionBatchSize' });
    expect(invalid({ db: db.prisma, handlers: [noop], reaper: { intervalMs: -1 } })).toMatchObject({ field: 'reaper.intervalMs' });
    expect(invalid({ db: db.prisma, handlers: [noop], unknownOption: true })).toMatchObject({ code: 'worker.invalid_options' });
  });

  it('refuses a drainMs that is not a non-negative integer', async () => {
    const worker = createWorker({ db: db.prisma, handlers: [noop], logger: silentLogger });
    expect(() => worker.stop({ drainMs: -1 })).toThrow(ValidationError);
    await worker.stop();
  });
});

describe('defineJob', () => {
  it('refuses a blank job type, a schema that is not zod, and a handler that is not a function', () => {
    expect(() => defineJob('  ', z.object({}), async () => null)).toThrow(expect.objectContaining({ code: 'worker.invalid_job_definition', field: 'jobType' }));
    expect(() => defineJob('x', {} as z.ZodType, async () => null)).toThrow(expect.objectContaining({ field: 'schema' }));
    expect(() => defineJob('x', z.object({}), 'nope' as never)).toThrow(expect.objectContaining({ field: 'handler' }));
  });

  it('types the payload from the schema', () => {
    const definition = defineJob('opts.typed', z.object({ amount: z.number() }), async (payload) => payload.amount * 2);
    expect(definition.jobType).toBe('opts.typed');
    // @ts-expect-error the payload has no `missing` field
    defineJob('opts.typed_wrong', z.object({ amount: z.number() }), async (payload) => payload.missing);
  });
});
