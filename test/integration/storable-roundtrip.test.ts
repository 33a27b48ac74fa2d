/**
 * Whatever the storable check accepts, PostgreSQL stores and gives back
 * unchanged; whatever it refuses is a coded ValidationError naming the field,
 * with nothing written. Properties over strings and JSON that often hold NUL,
 * lone surrogates and non-finite numbers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { adminScope, enqueueJob, getJob, ValidationError } from '../../src/index.js';
import { findJsonProblem, formatJsonPath, MAX_JSON_DEPTH, textProblem } from '../../src/validation/storable.js';
import { trickyJson, trickyString } from '../fixtures/storable/arbitraries.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function jobCount(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
  return row!.n;
}

async function refusal(promise: Promise<unknown>): Promise<ValidationError | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
}

describe('storable values round-trip through PostgreSQL', () => {
  it('stores an accepted payload unchanged (as JSON sees it) and refuses the rest naming the member', async () => {
    await fc.assert(
      fc.asyncProperty(trickyJson, async (payload) => {
        const problem = findJsonProblem(payload);
        const before = await jobCount();
        const enqueue = enqueueJob(db.prisma, { jobType: 'storable.payload', payload: payload as never });
        if (problem) {
          const error = await refusal(enqueue);
          expect(error).toMatchObject({ code: 'job.invalid_input', field: formatJsonPath(['payload', ...problem.path]) });
          expect(await jobCount()).toBe(before);
          return;
        }
        const { jobId } = await enqueue;
        const job = await getJob(db.prisma, { scope: adminScope(), jobId });
        // JSON itself writes -0 as 0; nothing else may change.
        expect(job.payload).toStrictEqual(JSON.parse(JSON.stringify(payload)));
      }),
      { numRuns: 300 },
    );
  });

  it('stores accepted job types and idempotency keys unchanged and refuses the rest by field', async () => {
    await fc.assert(
      fc.asyncProperty(trickyString, trickyString, async (jobType, key) => {
        const before = await jobCount();
        const enqueue = enqueueJob(db.prisma, { jobType, payload: {}, idempotencyKey: key });
        const typeOk = textProblem(jobType) === undefined && jobType.trim().length > 0 && jobType.length <= 200;
        const keyOk = textProblem(key) === undefined && key.trim().length > 0;
        if (!typeOk || !keyOk) {
          const error = await refusal(enqueue);
          expect(error?.code).toBe('job.invalid_input');
          expect(error?.field).toBe(typeOk ? 'idempotencyKey' : 'jobType');
          expect(await jobCount()).toBe(before);
          return;
        }
        const { jobId } = await enqueue;
        const [row] = await db.prisma.$queryRaw<{ job_type: string; idempotency_key: string }[]>`
          SELECT job_type, idempotency_key FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
        expect(row).toEqual({ job_type: jobType, idempotency_key: key });
      }),
      { numRuns: 300 },
    );
  });

  it(`stores JSON nested the full ${MAX_JSON_DEPTH} levels unchanged, and refuses one level more`, async () => {
    for (const wrap of [(v: unknown) => ({ a: v }), (v: unknown) => [v]]) {
      let payload: unknown = 'leaf';
      for (let i = 0; i < MAX_JSON_DEPTH; i += 1) payload = wrap(payload);
      const { jobId } = await enqueueJob(db.prisma, { jobType: 'storable.deep', payload: payload as never });
      expect((await getJob(db.prisma, { scope: adminScope(), jobId })).payload).toStrictEqual(payload);
      const error = await refusal(enqueueJob(db.prisma, { jobType: 'storable.deep', payload: wrap(payload) as never }));
      expect(error?.message).toMatch(/nested deeper than 256 levels/);
    }
  });
});
