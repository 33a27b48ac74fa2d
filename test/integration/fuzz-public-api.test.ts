/**
 * Every public function that takes input, fed random and hostile input
 * (test/harness/fuzz-hostile.ts: wrong types, huge and deeply nested values,
 * NUL and lone surrogates, SQL metacharacters, invalid ids, cyclic objects and
 * cyclic workflow edges, NaN/Infinity, dates outside PostgreSQL's range,
 * prototype-pollution keys). Each call either returns (a documented outcome)
 * or throws a RunledgerError whose code is in the ErrorCode union and is not
 * a database or internal-state code; a refused call changes no row; inside a
 * host transaction the transaction stays usable (SELECT 1, then a valid
 * enqueue commits); Object.prototype is never polluted.
 *
 * Run counts (CI time, 2 cores): RUNS_PER_EXPORT = 16 random runs per row of
 * the table (77 rows: 1,232 calls, a third of them inside a host
 * transaction; 53 rows and 848 calls before the catalog, intent, attempt,
 * recovery, metrics, schedule-declaration, continuation and dashboard rows;
 * then the typed enqueue-many and intent forms, getResult, migrate and the
 * run listener); the type-directed sweep gives each date, number and string
 * field of every row each hostile value of its type (about 2,030 calls; the
 * dates include the storable bounds 0001-01-01 and 9999-12-31);
 * ROUND_TRIP_RUNS = 40 round trips. The file took about 16-20 s of test time
 * on a quiet machine; 89 s on PG 15 with the machine at load average 24.
 * A failure prints fast-check's seed and path: `FUZZ_SEED=<seed>` replays it.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as runledger from '../../src/index.js';
import {
  cancelWorkflowRun,
  claimJobs,
  compareAndReplaySucceededJob,
  defineJob,
  ERROR_CODES,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getWorkflowRun,
  isRunledgerError,
  listWorkflowSteps,
  noOrganizationScope,
  recordJobEnqueueIntent,
  syncJobDefinitions,
  upsertSchedule,
  workflow,
  type Db,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { FUZZ_CASES, FUZZ_FUNCTION, NOT_FUZZED, type FuzzFixtures } from '../harness/fuzz-cases.js';
import { applyMutation, describeMutation, mutation, SQL_METACHARACTERS } from '../harness/fuzz-hostile.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const RUNS_PER_EXPORT = 16;
const ROUND_TRIP_RUNS = 40;
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

const db = useTestDatabase();
let fixtures: FuzzFixtures;
let tables: string[] = [];
const CODES = new Set<string>(ERROR_CODES);

beforeAll(async () => {
  const prisma = db.prisma;
  const definition = defineJob('fuzz.defined-job', z.object({ n: z.number() }), async () => null);
  const pending = await enqueueJob(prisma, { jobType: 'fuzz.pending', payload: {} });
  const succeeded = await enqueueJob(prisma, { jobType: 'fuzz.done', payload: {} });
  const dead = await enqueueJob(prisma, { jobType: 'fuzz.dead', payload: {}, maxAttempts: 1 });
  await runRunnableJobs(prisma, (job) => (job.jobType === 'fuzz.dead' ? { ok: false } : job.jobType === 'fuzz.done' ? { ok: true, output: 1 } : { ok: true }));
  // runRunnableJobs ran every pending job; enqueue the pending one's replacement and the leased one now.
  const stillPending = await enqueueJob(prisma, { jobType: 'fuzz.pending', payload: { again: true } });
  await enqueueJob(prisma, { jobType: 'fuzz.leased', payload: {} });
  const [lease] = await claimJobs(prisma, { workerId: 'fuzz-holder', jobTypes: ['fuzz.leased'], limit: 1, leaseSeconds: 3_600 });
  const open = await enqueueWorkflowRun(prisma, workflow('fuzz.open').job('work', 'fuzz.work', {}).external('gate').build());
  const finished = await enqueueWorkflowRun(prisma, workflow('fuzz.finished').external('gate').build());
  await cancelWorkflowRun(prisma, { scope: noOrganizationScope(), workflowRunId: finished.workflowRunId });
  const functionRun = await enqueueWorkflowRun(prisma, FUZZ_FUNCTION.run({ n: 1 }));
  // The catalog holds the fixture's type, and one intent of it waits: promoteEnqueueIntents has something to promote.
  await syncJobDefinitions(prisma, [definition]);
  await recordJobEnqueueIntent(prisma, { jobType: definition.jobType, payload: { n: 1 }, idempotencyKey: 'fuzz-fixture-intent' });
  await upsertSchedule(prisma, { key: 'fuzz.schedule', cron: '0 0 * * *', jobType: 'fuzz.sched', payload: {}, enabled: false });
  expect((await getJob(prisma, { scope: noOrganizationScope(), jobId: dead.jobId })).status).toBe('DEAD_LETTERED');
  void pending;
  fixtures = {
    root: prisma,
    url: db.url,
    pendingJobId: stillPending.jobId,
    lease: lease!,
    succeededJobId: succeeded.jobId,
    deadJobId: dead.jobId,
    openRunId: open.workflowRunId,
    finishedRunId: finished.workflowRunId,
    functionRunId: functionRun.workflowRunId,
    scheduleKey: 'fuzz.schedule',
    definition,
  };
  const rows = await prisma.$queryRaw<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = 'runledger' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations' ORDER BY table_name`;
  tables = rows.map((row) => row.name);
  expect(tables).toEqual(expect.arrayContaining(['job_queue', 'job_events', 'workflow_runs', 'workflow_steps', 'workflow_active_keys', 'workflow_mutations']));
});

afterAll(() => {
  // No run may have planted a property on Object.prototype through a `__proto__` or `constructor` key.
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

/** Rows per runledger table, the host's marker jobs left out. */
async function rowCounts(client: Db): Promise<Record<string, number>> {
  const raw = client as unknown as { $queryRawUnsafe<T>(sql: string): Promise<T> };
  const selects = tables.map((t) =>
    t === 'job_queue'
      ? `(SELECT count(*) FROM runledger.job_queue WHERE job_type <> 'host.marker')::int AS "${t}"`
      : t === 'job_events'
        ? `(SELECT count(*) FROM runledger.job_events e WHERE NOT EXISTS (SELECT 1 FROM runledger.job_queue j WHERE j.id = e.job_id AND j.job_type = 'host.marker'))::int AS "${t}"`
        : `(SELECT count(*) FROM runledger."${t}")::int AS "${t}"`,
  );
  const [row] = await raw.$queryRawUnsafe<Record<string, number>[]>(`SELECT ${selects.join(', ')}`);
  return row!;
}

const describeError = (error: unknown): string => `${(error as { code?: string }).code ?? '?'}: ${(error as Error).message}`;

/** The refusal contract: a RunledgerError with a listed code that is not the database's or an internal state, and no database wording in its message. */
function expectCodedRefusal(error: unknown, context: string): void {
  if (!isRunledgerError(error)) {
    throw new Error(`${context}: raw ${Object.prototype.toString.call(error)} ${(error as Error)?.stack ?? String(error)}`);
  }
  expect(CODES.has(error.code), `${context}: code ${error.code} is not in ERROR_CODES`).toBe(true);
  expect(error.code, `${context}: ${error.code} (${(error as { internalMessage?: string }).internalMessage ?? error.message})`).not.toMatch(
    /^database\.|\.internal_state$/,
  );
  // PostgreSQL's and Prisma's own wording (an input echoed back, e.g. an unrecognized key, may hold anything).
  expect(error.message, context).not.toMatch(
    /violates .*constraint|syntax error at or near|relation "|column "\w+" |duplicate key value|invalid input syntax for type|queryRaw|PrismaClient\w*Error/,
  );
}

describe('fuzzed public API', () => {
  it('covers every function export: each is in the fuzz table or in the justified exclusion list, and no row is stale', () => {
    const functions = Object.entries(runledger)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name);
    const rows = Object.keys(FUZZ_CASES).map((key) => key.split('#')[0]!);
    const uncovered = functions.filter((name) => !rows.includes(name) && !(name in NOT_FUZZED));
    expect(uncovered, 'new public functions: add a row to FUZZ_CASES (test/harness/fuzz-cases.ts) or a reason to NOT_FUZZED').toEqual([]);
    const stale = [...rows, ...Object.keys(NOT_FUZZED)].filter((name) => typeof (runledger as Record<string, unknown>)[name] !== 'function');
    expect(stale).toEqual([]);
    expect(rows.filter((name) => name in NOT_FUZZED)).toEqual([]);
  });

  for (const [name, fuzzCase] of Object.entries(FUZZ_CASES)) {
    it(`${name}: hostile input yields a documented outcome or a coded refusal that changes nothing`, async () => {
      // Counted so that a row whose every input is accepted (a pure function's) still asserts its runs all ended.
      let settled = 0;
      await fc.assert(
        fc.asyncProperty(mutation, fc.nat(2), async (m, txPick) => {
          settled += 1;
          const args = applyMutation(fuzzCase.args(fixtures), m);
          const context = `${name} with ${describeMutation(m)}`;
          if (fuzzCase.pure) {
            try {
              await fuzzCase.call(db.prisma, args, fixtures);
            } catch (error) {
              expectCodedRefusal(error, context);
            }
            return;
          }
          const before = await rowCounts(db.prisma);
          if (txPick !== 0) {
            let refused: unknown;
            try {
              await fuzzCase.call(db.prisma, args, fixtures);
            } catch (error) {
              refused = error;
              expectCodedRefusal(error, context);
            }
            if (refused) expect(await rowCounts(db.prisma), `${context}: rows changed although refused with ${describeError(refused)}`).toEqual(before);
            return;
          }
          // Inside the host's transaction: the refusal leaves it usable, and the host's own enqueue commits.
          const marker = await db.prisma.$transaction(
            async (tx) => {
              let refused: unknown;
              try {
                await fuzzCase.call(tx, args, fixtures);
              } catch (error) {
                refused = error;
                expectCodedRefusal(error, `${context} (host transaction)`);
              }
              expect(await tx.$queryRaw<{ one: number }[]>`SELECT 1::int AS one`).toEqual([{ one: 1 }]);
              if (refused)
                expect(await rowCounts(tx), `${context}: rows changed although refused with ${describeError(refused)} (host transaction)`).toEqual(before);
              return (await enqueueJob(tx, { jobType: 'host.marker', payload: { after: name } })).jobId;
            },
            { timeout: 60_000 },
          );
          expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: marker })).status).toBe('PENDING');
          await db.prisma.$executeRaw`DELETE FROM runledger.job_events WHERE job_id = ${marker}::uuid`;
          await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE id = ${marker}::uuid`;
        }),
        { numRuns: RUNS_PER_EXPORT, ...(seed === undefined ? {} : { seed }), endOnFailure: true },
      );
      expect(settled, `${name}: runs that reached an outcome`).toBe(RUNS_PER_EXPORT);
    });
  }
});

/** Type-directed sweep values: every scalar slot of every row gets each value of its own type's list. */
const SWEEP: { when: (value: unknown) => boolean; values: unknown[] }[] = [
  {
    when: (v) => v instanceof Date,
    values: [
      new Date(Number.NaN),
      new Date(-8.64e15),
      new Date(8.64e15),
      new Date('-004714-11-23T00:00:00Z'),
      new Date('294277-01-01T00:00:00Z'),
      new Date('0001-01-01T00:00:00Z'),
      new Date('9999-12-31T23:59:59.999Z'),
    ],
  },
  { when: (v) => typeof v === 'number', values: [Number.NaN, Number.POSITIVE_INFINITY, -1, 0, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63)] },
  { when: (v) => typeof v === 'string', values: ['', ' ', 'a\u0000b', 'a\uD800', SQL_METACHARACTERS[0], 'x'.repeat(600)] },
];

describe('type-directed sweep', () => {
  it('gives every date, number and string field of every row each hostile value of its type: coded refusal or documented outcome', async () => {
    const placeholderSlots = (args: unknown[]): string[][] => {
      const paths: string[][] = [];
      const walk = (value: unknown, path: string[]) => {
        if (SWEEP.some((s) => s.when(value))) paths.push(path);
        else if (
          Array.isArray(value) ||
          (value !== null &&
            typeof value === 'object' &&
            Object.getPrototypeOf(value) === Object.prototype &&
            !Object.isFrozen(value) &&
            !('$transaction' in value))
        )
          for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
      };
      for (const [index, arg] of args.entries()) walk(arg, [String(index)]);
      return paths;
    };
    let calls = 0;
    for (const [name, fuzzCase] of Object.entries(FUZZ_CASES)) {
      for (const path of placeholderSlots(fuzzCase.args(fixtures))) {
        const original = path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], fuzzCase.args(fixtures));
        for (const value of SWEEP.find((s) => s.when(original))!.values) {
          const args = fuzzCase.args(fixtures);
          const parent = path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], args) as Record<string, unknown>;
          parent[path[path.length - 1]!] = value;
          const context = `${name} with ${path.join('.')} := ${String(value).slice(0, 40)}`;
          const before = fuzzCase.pure ? undefined : await rowCounts(db.prisma);
          calls += 1;
          try {
            await fuzzCase.call(db.prisma, args, fixtures);
          } catch (error) {
            expectCodedRefusal(error, context);
            if (before) expect(await rowCounts(db.prisma), `${context}: rows changed although refused with ${describeError(error)}`).toEqual(before);
          }
        }
      }
    }
    expect(calls).toBeGreaterThan(1_000);
  });
});

const storableText = fc
  .oneof(
    fc.constantFrom(...SQL_METACHARACTERS),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
    fc.string({
      unit: fc.constantFrom('é', '\uD83D\uDE00', '\u200B', '\u202E', "'", '"', '\\', '%', '_', '$', ';', '-', '*', '/'),
      minLength: 1,
      maxLength: 20,
    }),
  )
  .filter((s) => s.trim().length > 0 && s.length <= 200);

describe('round trip', () => {
  it('keeps strings with SQL metacharacters and unicode unchanged through enqueue and read', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        storableText,
        storableText,
        storableText,
        fc.dictionary(storableText, storableText, { maxKeys: 3 }),
        async (jobType, key, org, payload) => {
          n += 1;
          const idempotencyKey = `${key}#${n}`;
          const { jobId } = await enqueueJob(db.prisma, {
            jobType,
            payload: { text: key, nested: payload },
            organizationId: org,
            idempotencyKey,
            resource: key,
          });
          const job = await getJob(db.prisma, { scope: runledger.organizationScope(org), jobId });
          expect(job).toMatchObject({ jobType, organizationId: org, payload: { text: key, nested: payload }, idempotencyKey, resourceKey: key });

          const run = await enqueueWorkflowRun(
            db.prisma,
            workflow(jobType, { [key]: org })
              .organization(org)
              .job(key, jobType, payload)
              .external(`${key}~ext`)
              .afterSuccess(`${key}~ext`, [key])
              .build(),
          );
          const stored = await getWorkflowRun(db.prisma, { scope: runledger.organizationScope(org), workflowRunId: run.workflowRunId });
          expect(stored).toMatchObject({ workflowType: jobType, organizationId: org, metadata: { [key]: org } });
          const steps = await listWorkflowSteps(db.prisma, { scope: runledger.organizationScope(org), workflowRunId: run.workflowRunId });
          expect(steps.items.map((s) => [s.stepKey, s.payload])).toEqual([
            [key, payload],
            [`${key}~ext`, null],
          ]);
        },
      ),
      { numRuns: ROUND_TRIP_RUNS, ...(seed === undefined ? {} : { seed }) },
    );
  });

  it('keeps a failure message and a replay reason with SQL metacharacters unchanged', async () => {
    // Its own job type: the fuzzed calls above may have claimed or canceled any fixture.
    await enqueueJob(db.prisma, { jobType: 'fuzz.round-trip-failure', payload: {} });
    const [claimed] = await claimJobs(db.prisma, { workerId: 'rt', jobTypes: ['fuzz.round-trip-failure'], limit: 1, leaseSeconds: 60 });
    const message = SQL_METACHARACTERS.join(' | ');
    await failJob(db.prisma, { ...claimed!, error: { code: "fuzz.'quoted'", message }, retryable: false });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: claimed!.jobId })).toMatchObject({
      lastErrorMessage: message,
      lastErrorCode: "fuzz.'quoted'",
    });
    const replay = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: fixtures.succeededJobId,
      expectedRunNumber: 1,
      replayRequestKey: "'; --",
      reason: message,
    });
    expect(replay).toMatchObject({ kind: 'replayed' });
  });
});
