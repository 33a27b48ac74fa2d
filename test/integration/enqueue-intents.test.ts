import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  defineJob,
  enqueueJob,
  getEnqueueIntentStats,
  getJob,
  noOrganizationScope,
  organizationScope,
  promoteEnqueueIntents,
  recordJobEnqueueIntent,
  setJobDefinitionEnabled,
  syncJobDefinitions,
  verifyIntegrity,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const noop = async () => undefined;

interface IntentState {
  state: string;
  job_id: string | null;
  attempts: number;
  last_error_code: string | null;
  retry_later: boolean;
}

async function intent(id: string): Promise<IntentState | undefined> {
  const [row] = await db.prisma.$queryRaw<IntentState[]>`
    SELECT state::text, job_id, attempts, last_error_code, next_attempt_at > now() AS retry_later
      FROM runledger.job_enqueue_intents WHERE id = ${id}::uuid`;
  return row;
}

async function sync(jobType: string): Promise<void> {
  await syncJobDefinitions(db.prisma, [defineJob(jobType, z.object({}).passthrough(), noop)]);
}

describe('recordJobEnqueueIntent', () => {
  it('writes nothing when the host transaction rolls back', async () => {
    let intentId = '';
    await expect(
      db.prisma.$transaction(async (tx) => {
        ({ intentId } = await recordJobEnqueueIntent(tx, { jobType: 'intent.rollback', payload: {}, idempotencyKey: 'r-1' }));
        throw new Error('host change failed');
      }),
    ).rejects.toThrow('host change failed');
    expect(intentId).not.toBe('');
    expect(await intent(intentId)).toBeUndefined();
  });

  it('refuses an intent without an idempotency key, naming the field, writing nothing', async () => {
    await expect(recordJobEnqueueIntent(db.prisma, { jobType: 'intent.bad', payload: {} } as never)).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'idempotencyKey',
    });
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_enqueue_intents WHERE job_type = 'intent.bad'`;
    expect(row!.n).toBe(0);
  });

  it('returns the existing intent when the same request is recorded again under its key', async () => {
    const request = { jobType: 'intent.again', payload: { order: 7, lines: [1, 2] }, idempotencyKey: 'again-1', priority: 3 };
    const first = await recordJobEnqueueIntent(db.prisma, request);
    expect(first.disposition).toBe('inserted');
    // The same request in another key order, with the default attempts written out, and a joined transaction.
    const again = await db.prisma.$transaction((tx) =>
      recordJobEnqueueIntent(tx, { idempotencyKey: 'again-1', payload: { lines: [1, 2], order: 7 }, jobType: 'intent.again', priority: 3, maxAttempts: 5 }),
    );
    expect(again).toEqual({ intentId: first.intentId, disposition: 'existing' });
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_enqueue_intents WHERE job_type = 'intent.again' AND idempotency_key = 'again-1'`;
    expect(row!.n).toBe(1);
    // Another organization's key is another key.
    const elsewhere = await recordJobEnqueueIntent(db.prisma, { ...request, organizationId: 'org-again' });
    expect(elsewhere.intentId).not.toBe(first.intentId);
  });

  it('refuses a changed request under a recorded key with job.intent_idempotency_conflict, writing nothing', async () => {
    const first = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.changed', payload: { n: 1 }, idempotencyKey: 'changed-1' });
    for (const changed of [{ payload: { n: 2 } }, { priority: 9 }, { payload: { n: 1 }, resource: 'printer' }]) {
      const error = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.changed', payload: { n: 1 }, idempotencyKey: 'changed-1', ...changed }).catch(
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: 'job.intent_idempotency_conflict', category: 'conflict' });
      expect(JSON.stringify(error)).not.toContain('INSERT');
    }
    // Inside a host transaction the refusal leaves the transaction usable, and it commits the host's own writes only.
    await db.prisma.$transaction(async (tx) => {
      await expect(recordJobEnqueueIntent(tx, { jobType: 'intent.changed', payload: { n: 3 }, idempotencyKey: 'changed-1' })).rejects.toMatchObject({
        code: 'job.intent_idempotency_conflict',
      });
      await tx.$queryRaw`SELECT 1`;
    });
    const rows = await db.prisma.$queryRaw<{ id: string; payload: unknown }[]>`
      SELECT id, payload FROM runledger.job_enqueue_intents WHERE job_type = 'intent.changed'`;
    expect(rows).toEqual([{ id: first.intentId, payload: { n: 1 } }]);
  });

  it('records one intent when two transactions record the same key at once, and refuses the changed one of a concurrent pair', async () => {
    const clients = Array.from({ length: 4 }, () => db.newClient({ max: 1 }));
    await Promise.all(clients.map((client) => client.$connect()));
    const both = barrier(2);
    const same = await Promise.all(
      clients.slice(0, 2).map((client) =>
        client.$transaction(async (tx) => {
          await both();
          return recordJobEnqueueIntent(tx, { jobType: 'intent.concurrent', payload: { n: 1 }, idempotencyKey: 'c-1' });
        }),
      ),
    );
    expect(same[0]!.intentId).toBe(same[1]!.intentId);
    expect(same.map((r) => r.disposition).sort()).toEqual(['existing', 'inserted']);

    const pair = barrier(2);
    const outcomes = await Promise.allSettled(
      clients.slice(2).map((client, i) =>
        client.$transaction(async (tx) => {
          await pair();
          return recordJobEnqueueIntent(tx, { jobType: 'intent.concurrent', payload: { n: i }, idempotencyKey: 'c-2' });
        }),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason.code)).toEqual(['job.intent_idempotency_conflict']);
    const [row] = await db.prisma.$queryRaw<{ one: number; two: number }[]>`
      SELECT count(*) FILTER (WHERE idempotency_key = 'c-1')::int AS one, count(*) FILTER (WHERE idempotency_key = 'c-2')::int AS two
        FROM runledger.job_enqueue_intents WHERE job_type = 'intent.concurrent'`;
    expect(row).toEqual({ one: 1, two: 1 });
  });

  it('takes a typed definition: its type and settings, unless the intent gives its own, reach the promoted job', async () => {
    const invoice = defineJob('intent.typed', z.object({ orderId: z.string() }), noop, { priority: 7, retry: { maxAttempts: 2 }, timeoutSeconds: 45 });
    const { intentId } = await recordJobEnqueueIntent(db.prisma, invoice, { orderId: 'o-1' }, { idempotencyKey: 'typed-1', maxAttempts: 4 });
    await syncJobDefinitions(db.prisma, [invoice]);
    await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.typed'] });
    const promoted = await intent(intentId);
    expect(promoted).toMatchObject({ state: 'PROMOTED' });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: promoted!.job_id! });
    expect(job).toMatchObject({
      jobType: 'intent.typed',
      payload: { orderId: 'o-1' },
      priority: 7,
      maxAttempts: 4,
      timeoutSeconds: 45,
      idempotencyKey: 'typed-1',
    });

    // Settings missing or not an object, or no key in them: refused by field, nothing written.
    for (const [settings, field] of [
      [undefined, 'settings'],
      ['typed-2', 'settings'],
      [{ priority: 1 }, 'idempotencyKey'],
    ] as const) {
      await expect(recordJobEnqueueIntent(db.prisma, invoice, { orderId: 'o-2' }, settings as never)).rejects.toMatchObject({
        code: 'job.invalid_input',
        field,
      });
    }
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_enqueue_intents WHERE job_type = 'intent.typed'`;
    expect(row!.n).toBe(1);
  });
});

describe('promoteEnqueueIntents', () => {
  it('keeps an intent pending while its type has no definition, or a disabled one', async () => {
    const { intentId } = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.later', payload: { a: 1 }, idempotencyKey: 'later-1' });
    expect(await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.later'] })).toEqual({ claimed: 0, intents: [] });
    await sync('intent.later');
    await setJobDefinitionEnabled(db.prisma, { jobType: 'intent.later', enabled: false });
    expect(await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.later'] })).toEqual({ claimed: 0, intents: [] });
    expect(await intent(intentId)).toMatchObject({ state: 'PENDING', attempts: 0, job_id: null });
    await setJobDefinitionEnabled(db.prisma, { jobType: 'intent.later', enabled: true });
    const result = await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.later'] });
    expect(result.intents).toEqual([{ intentId, outcome: 'inserted', jobId: expect.any(String) }]);
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: result.intents[0]!.jobId! });
    expect(job).toMatchObject({ jobType: 'intent.later', payload: { a: 1 }, idempotencyKey: 'later-1', status: 'PENDING' });
    expect(await intent(intentId)).toMatchObject({ state: 'PROMOTED', job_id: job.id, attempts: 1 });
    expect(await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.later'] })).toEqual({ claimed: 0, intents: [] });
  });

  it('promotes to the existing job of the same request, and keeps a conflicting one as evidence', async () => {
    await sync('intent.idem');
    const existing = await enqueueJob(db.prisma, { jobType: 'intent.idem', payload: { n: 1 }, idempotencyKey: 'same' });
    const other = await enqueueJob(db.prisma, { jobType: 'intent.idem', payload: { n: 1 }, idempotencyKey: 'other' });
    const same = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.idem', payload: { n: 1 }, idempotencyKey: 'same' });
    const conflicting = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.idem', payload: { n: 2 }, idempotencyKey: 'other' });
    const result = await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.idem'] });
    expect(result.intents).toEqual([
      { intentId: same.intentId, outcome: 'existing', jobId: existing.jobId },
      { intentId: conflicting.intentId, outcome: 'conflict', jobId: other.jobId },
    ]);
    expect(await intent(same.intentId)).toMatchObject({ state: 'PROMOTED', job_id: existing.jobId });
    expect(await intent(conflicting.intentId)).toMatchObject({ state: 'CONFLICT', job_id: other.jobId, last_error_code: 'job.intent_idempotency_conflict' });
    expect((await getEnqueueIntentStats(db.prisma, { scope: noOrganizationScope() })).conflicts).toBeGreaterThanOrEqual(1);
  });

  it('keeps an intent the database refuses pending with its failure, and promotes the rest of its batch', async () => {
    await sync('intent.poison');
    const good = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.poison', payload: {}, idempotencyKey: 'good' });
    const bad = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.poison', payload: {}, idempotencyKey: 'bad' });
    // A row no public input can make: job_queue's CHECK refuses max_attempts 0 at promotion.
    await db.prisma.$executeRaw`UPDATE runledger.job_enqueue_intents SET max_attempts = 0 WHERE id = ${bad.intentId}::uuid`;
    const result = await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.poison'] });
    expect(result.intents.map((i) => [i.intentId, i.outcome])).toEqual([
      [good.intentId, 'inserted'],
      [bad.intentId, 'failed'],
    ]);
    expect(await intent(good.intentId)).toMatchObject({ state: 'PROMOTED' });
    expect(await intent(bad.intentId)).toMatchObject({
      state: 'PENDING',
      attempts: 1,
      last_error_code: expect.stringMatching(/^database\./),
      retry_later: true,
    });
    // Not due yet: the next pass leaves it alone, and the stats show the backlog.
    expect(await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.poison'] })).toEqual({ claimed: 0, intents: [] });
    const stats = await getEnqueueIntentStats(db.prisma, { scope: adminScope() });
    expect(stats.maxPendingAttempts).toBeGreaterThanOrEqual(1);
    expect(stats.failing).toBeGreaterThanOrEqual(1);
  });

  it('promotes each intent exactly once across four concurrent promoters', async () => {
    await sync('intent.race');
    for (let i = 0; i < 200; i += 1) {
      await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.race', payload: { i }, idempotencyKey: `race-${i}` });
    }
    const clients = Array.from({ length: 4 }, () => db.newClient({ max: 1 }));
    await Promise.all(clients.map((client) => client.$connect()));
    const arrive = barrier(4);
    const outcomes = await Promise.all(
      clients.map(async (client) => {
        await arrive();
        const mine: string[] = [];
        for (;;) {
          const result = await promoteEnqueueIntents(client, { jobTypes: ['intent.race'], limit: 7 });
          mine.push(...result.intents.filter((i) => i.outcome === 'inserted').map((i) => i.intentId));
          if (result.claimed === 0) return mine;
        }
      }),
    );
    const all = outcomes.flat();
    expect(all).toHaveLength(200);
    expect(new Set(all).size).toBe(200);
    expect(outcomes.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
    const [row] = await db.prisma.$queryRaw<{ jobs: number; pending: number; events: number }[]>`
      SELECT (SELECT count(*)::int FROM runledger.job_queue WHERE job_type = 'intent.race') AS jobs,
             (SELECT count(*)::int FROM runledger.job_enqueue_intents WHERE job_type = 'intent.race' AND state <> 'PROMOTED') AS pending,
             (SELECT count(*)::int FROM runledger.job_trail e JOIN runledger.job_queue jq ON jq.id = e.job_id
               WHERE jq.job_type = 'intent.race' AND e.payload ? 'enqueueIntentId') AS events`;
    expect(row).toEqual({ jobs: 200, pending: 0, events: 200 });
  });

  it('promotes only the types it is given', async () => {
    await sync('intent.mine');
    await sync('intent.theirs');
    const mine = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.mine', payload: {}, idempotencyKey: 'm-1' });
    const theirs = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.theirs', payload: {}, idempotencyKey: 't-1' });
    const result = await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.mine'] });
    expect(result.intents.map((i) => i.intentId)).toEqual([mine.intentId]);
    expect(await intent(theirs.intentId)).toMatchObject({ state: 'PENDING', attempts: 0 });
  });

  it('leaves the intent pending and no job when the promoting transaction rolls back', async () => {
    await sync('intent.joined');
    const { intentId } = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.joined', payload: {}, idempotencyKey: 'j-1' });
    await expect(
      db.prisma.$transaction(async (tx) => {
        const result = await promoteEnqueueIntents(tx, { jobTypes: ['intent.joined'] });
        expect(result.intents.map((i) => i.outcome)).toEqual(['inserted']);
        throw new Error('caller rolls back');
      }),
    ).rejects.toThrow('caller rolls back');
    expect(await intent(intentId)).toMatchObject({ state: 'PENDING', attempts: 0, job_id: null });
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = 'intent.joined'`;
    expect(row!.n).toBe(0);
  });

  it('refuses a joined transaction stronger than READ COMMITTED before taking anything', async () => {
    await db.prisma.$transaction(
      async (tx) => {
        await expect(promoteEnqueueIntents(tx, { jobTypes: ['intent.any'] })).rejects.toMatchObject({ code: 'job.intent_unsupported_isolation' });
      },
      { isolationLevel: 'RepeatableRead' },
    );
  });
});

describe('integrity of intents', () => {
  it('reports a settled intent whose job has another key (seeded corruption), and nothing before', async () => {
    await sync('intent.integrity');
    const { intentId } = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.integrity', payload: {}, idempotencyKey: 'i-1' });
    const [promoted] = (await promoteEnqueueIntents(db.prisma, { jobTypes: ['intent.integrity'] })).intents;
    const before = await verifyIntegrity(db.prisma);
    expect(before.violations.filter((v) => v.kind === 'intent.job_mismatch')).toEqual([]);
    await db.prisma.$executeRaw`UPDATE runledger.job_enqueue_intents SET idempotency_key = 'i-2' WHERE id = ${intentId}::uuid`;
    const after = await verifyIntegrity(db.prisma);
    expect(after.violations.filter((v) => v.kind === 'intent.job_mismatch')).toEqual([
      expect.objectContaining({
        jobId: promoted!.jobId,
        expected: expect.objectContaining({ intentId, idempotencyKey: 'i-2' }),
        found: expect.objectContaining({ idempotencyKey: 'i-1' }),
      }),
    ]);
    await db.prisma.$executeRaw`UPDATE runledger.job_enqueue_intents SET idempotency_key = 'i-1' WHERE id = ${intentId}::uuid`;
  });
});

describe('intent stats', () => {
  it("counts pending intents and the oldest one's age within the scope", async () => {
    const org = 'org-intent-stats';
    await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.stats', payload: {}, idempotencyKey: 's-1', organizationId: org });
    await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.stats', payload: {}, idempotencyKey: 's-2', organizationId: org });
    await db.prisma.$executeRaw`UPDATE runledger.job_enqueue_intents SET created_at = now() - interval '90 seconds' WHERE idempotency_key = 's-1'`;
    const stats = await getEnqueueIntentStats(db.prisma, { scope: organizationScope(org) });
    expect(stats).toMatchObject({ pending: 2, maxPendingAttempts: 0, failing: 0, conflicts: 0 });
    expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(90_000);
    expect(await getEnqueueIntentStats(db.prisma, { scope: organizationScope('org-none') })).toEqual({
      pending: 0,
      oldestPendingAgeMs: null,
      maxPendingAttempts: 0,
      failing: 0,
      conflicts: 0,
    });
  });
});

describe("the worker's promoter loop", () => {
  it('syncs its definitions at start and runs the job of an intent recorded before the type existed', async () => {
    const { intentId } = await recordJobEnqueueIntent(db.prisma, { jobType: 'intent.worker', payload: { v: 'x' }, idempotencyKey: 'w-1' });
    let ran!: (payload: unknown) => void;
    const done = new Promise<unknown>((resolve) => (ran = resolve));
    await startWorker({
      handlers: [defineJob('intent.worker', z.object({ v: z.string() }), async (payload) => ran(payload))],
      intents: { intervalMs: 50 },
    });
    expect(await done).toEqual({ v: 'x' });
    expect(await intent(intentId)).toMatchObject({ state: 'PROMOTED' });
  });
});
