/**
 * getQueueMetrics: what each figure counts, its windows, and scope (an
 * organization sees only its own rows). Rows are seeded with timestamps
 * relative to an injected clock, plus one real workflow run for the
 * direct/workflow split.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { continueJobs } from '../../src/queue/continue.js';
import {
  adminScope,
  claimJobs,
  enqueueJob,
  enqueueWorkflowRun,
  getQueueMetrics,
  isRunledgerError,
  noOrganizationScope,
  organizationScope,
  recordJobEnqueueIntent,
  setConcurrencyLimit,
  setRateLimit,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory, idAt } from '../harness/finished-history.js';

const db = useTestDatabase();
let NOW: Date;

async function job(fields: {
  type: string;
  org?: string;
  status?: 'PENDING' | 'LEASED' | 'SUCCEEDED' | 'DEAD_LETTERED' | 'CANCELED';
  priority?: number;
  /** Seconds before NOW (negative: after). */
  dueAgo?: number;
  createdAgo?: number;
  startedAgo?: number;
  finishedAgo?: number;
}): Promise<void> {
  const at = (secondsAgo: number | undefined) => (secondsAgo === undefined ? null : new Date(NOW.getTime() - secondsAgo * 1000));
  const status = fields.status ?? 'PENDING';
  const leased = status === 'LEASED';
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, priority, attempt, created_at, next_run_at,
                                     started_at, finished_at, lease_owner, lease_expires_at)
    VALUES (${idAt(at(fields.createdAgo ?? fields.dueAgo ?? 0)!)}::uuid, ${fields.type}, ${fields.org ?? null}::text, '{}', ${status}::runledger.job_status, ${fields.priority ?? 0}::int,
            ${status === 'PENDING' ? 0 : 1}::int, ${at(fields.createdAgo ?? fields.dueAgo ?? 0)}::timestamptz,
            ${at(fields.dueAgo ?? fields.createdAgo ?? 0)}::timestamptz, ${at(fields.startedAgo)}::timestamptz, ${at(fields.finishedAgo)}::timestamptz,
            ${leased ? 'w' : null}::text, ${leased ? at(-60) : null}::timestamptz)`;
  // A lease has its lease row, as the claim writes it (migration 20261229000000_job_leases).
  if (leased)
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_leases (expires_at, job_id)
      SELECT jq.lease_expires_at, jq.id FROM runledger.job_queue jq
       WHERE jq.status = 'LEASED' AND NOT EXISTS (SELECT 1 FROM runledger.job_leases l WHERE l.job_id = jq.id)`;
}

beforeAll(async () => {
  // A workflow run enqueued now: its first step's job is PENDING, kind 'workflow'.
  await enqueueWorkflowRun(db.prisma, workflow('metrics.wf', {}).job('a', 'metrics.step', {}).build());
  NOW = new Date(Date.now() + 60_000);
  // Pending: two due at different priorities (the oldest due 600 s ago, at the lower priority), one not yet due.
  await job({ type: 'metrics.a', dueAgo: 30, priority: 5 });
  await job({ type: 'metrics.a', dueAgo: 600, priority: -1 });
  await job({ type: 'metrics.a', dueAgo: -3600 });
  await job({ type: 'metrics.a', org: 'org-1', dueAgo: 5000 });
  await job({ type: 'metrics.b', status: 'LEASED', startedAgo: 10 });
  // Finished in the last hour: waited 2 s and 4 s, ran 10 s and 20 s.
  await job({ type: 'metrics.a', status: 'SUCCEEDED', createdAgo: 100, startedAgo: 98, finishedAgo: 88 });
  await job({ type: 'metrics.a', status: 'DEAD_LETTERED', createdAgo: 100, startedAgo: 96, finishedAgo: 76 });
  await job({ type: 'metrics.b', status: 'CANCELED', createdAgo: 100, finishedAgo: 50 });
  // Outside the hour; one dead letter inside the day, one outside it.
  await job({ type: 'metrics.a', status: 'SUCCEEDED', createdAgo: 7300, startedAgo: 7300, finishedAgo: 7200 });
  await job({ type: 'metrics.a', status: 'DEAD_LETTERED', createdAgo: 7300, startedAgo: 7300, finishedAgo: 7200 });
  await job({ type: 'metrics.a', status: 'DEAD_LETTERED', createdAgo: 90_000, startedAgo: 90_000, finishedAgo: 88_000 });
  // Another organization's rows.
  await job({ type: 'metrics.a', org: 'org-1', status: 'DEAD_LETTERED', createdAgo: 100, startedAgo: 99, finishedAgo: 90 });
  // The finished counts read the counters the terminal statements add to: what they would have added.
  await countFinishedHistory(db.prisma);
});

describe('getQueueMetrics', () => {
  it('counts live jobs by type and kind, finished ones in the last hour, and dead letters in the last day', async () => {
    const m = await getQueueMetrics(db.prisma, { scope: adminScope(), now: NOW });
    expect(m.asOf).toEqual(NOW);
    expect(m.windows).toEqual({ recentMs: 3_600_000, deadLetteredMs: 86_400_000 });
    expect(m.byType).toEqual([
      {
        jobType: 'metrics.a',
        kind: 'direct',
        pending: 4,
        runnable: 3,
        leased: 0,
        debounceWaiting: 0,
        finishedRecently: { succeeded: 1, deadLettered: 2, canceled: 0 },
      },
      {
        jobType: 'metrics.b',
        kind: 'direct',
        pending: 0,
        runnable: 0,
        leased: 1,
        debounceWaiting: 0,
        finishedRecently: { succeeded: 0, deadLettered: 0, canceled: 1 },
      },
      {
        jobType: 'metrics.step',
        kind: 'workflow',
        pending: 1,
        runnable: 1,
        leased: 0,
        debounceWaiting: 0,
        finishedRecently: { succeeded: 0, deadLettered: 0, canceled: 0 },
      },
    ]);
    expect(m.jobs).toEqual({ pending: 5, runnable: 4, leased: 1, debounceWaiting: 0, finishedRecently: { succeeded: 1, deadLettered: 2, canceled: 1 } });
    expect(m.deadLetteredLast24h).toBe(3);
    expect(m.oldestRunnableAgeMs).toBe(5_000_000);
    expect(m.workflowRuns).toEqual({ running: 1, waitingForExternal: 0, finishedRecently: { succeeded: 0, completedWithErrors: 0, canceled: 0 } });
  });

  it('takes wait and run time percentiles over jobs that finished in the last hour and had started', async () => {
    const m = await getQueueMetrics(db.prisma, { scope: noOrganizationScope(), now: NOW });
    // The canceled job never started: out of the sample.
    expect(m.waitTimeMs).toEqual({ samples: 2, p50: 3_000, p95: 3_900 });
    expect(m.runTimeMs).toEqual({ samples: 2, p50: 15_000, p95: 19_500 });
  });

  it("sees only its own organization's rows in an organization scope", async () => {
    const m = await getQueueMetrics(db.prisma, { scope: organizationScope('org-1'), now: NOW });
    expect(m.byType).toEqual([
      {
        jobType: 'metrics.a',
        kind: 'direct',
        pending: 1,
        runnable: 1,
        leased: 0,
        debounceWaiting: 0,
        finishedRecently: { succeeded: 0, deadLettered: 1, canceled: 0 },
      },
    ]);
    expect(m.oldestRunnableAgeMs).toBe(5_000_000);
    expect(m.deadLetteredLast24h).toBe(1);
    expect(m.workflowRuns.running).toBe(0);
    expect(m.waitTimeMs).toEqual({ samples: 1, p50: 1_000, p95: 1_000 });
  });

  it('without an organization, leaves organization rows out', async () => {
    const m = await getQueueMetrics(db.prisma, { scope: noOrganizationScope(), now: NOW });
    expect(m.jobs.pending).toBe(4);
    expect(m.oldestRunnableAgeMs).toBe(600_000);
    expect(m.deadLetteredLast24h).toBe(2);
    expect(m.workflowRuns.running).toBe(1);
  });

  it('reports nothing due as null and empty samples as null percentiles', async () => {
    const m = await getQueueMetrics(db.prisma, { scope: organizationScope('nobody'), now: NOW });
    expect(m.oldestRunnableAgeMs).toBeNull();
    expect(m.waitTimeMs).toEqual({ samples: 0, p50: null, p95: null });
    expect(m.byType).toEqual([]);
  });

  it('uses the database clock when none is given', async () => {
    const m = await getQueueMetrics(db.prisma, { scope: adminScope() });
    expect(Math.abs(m.asOf.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('includes the enqueue intent backlog of its scope', async () => {
    const empty = await getQueueMetrics(db.prisma, { scope: organizationScope('org-intents'), now: NOW });
    expect(empty.intents).toEqual({ pending: 0, oldestPendingAgeMs: null, maxPendingAttempts: 0, failing: 0, conflicts: 0 });
    await recordJobEnqueueIntent(db.prisma, { jobType: 'metrics.intent', payload: {}, idempotencyKey: 'i-1', organizationId: 'org-intents' });
    await recordJobEnqueueIntent(db.prisma, { jobType: 'metrics.intent', payload: {}, idempotencyKey: 'i-2', organizationId: 'org-intents' });
    const mine = await getQueueMetrics(db.prisma, { scope: organizationScope('org-intents'), now: NOW });
    expect(mine.intents).toMatchObject({ pending: 2, failing: 0, conflicts: 0 });
    expect(mine.intents.oldestPendingAgeMs).not.toBeNull();
    expect((await getQueueMetrics(db.prisma, { scope: organizationScope('org-other'), now: NOW })).intents.pending).toBe(0);
    expect((await getQueueMetrics(db.prisma, { scope: noOrganizationScope(), now: NOW })).intents.pending).toBe(0);
  });

  it('counts the slices that ended in a continuation in the last hour, and their jobs, in its scope', async () => {
    const before = await getQueueMetrics(db.prisma, { scope: organizationScope('org-slices') });
    expect(before.continuationsRecently).toEqual({ slices: 0, jobs: 0 });
    await enqueueJob(db.prisma, { jobType: 'metrics.sliced', payload: {}, organizationId: 'org-slices' });
    for (let slice = 1; slice <= 3; slice += 1) {
      const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['metrics.sliced'], limit: 1, leaseSeconds: 60, markRunning: true });
      const [outcome] = await continueJobs(db.prisma, [{ lease: lease!, delayMs: 0, checkpoint: { slice } }]);
      expect(outcome?.outcome).toBe('continued');
    }
    const after = await getQueueMetrics(db.prisma, { scope: organizationScope('org-slices') });
    expect(after.continuationsRecently).toEqual({ slices: 3, jobs: 1 });
    expect((await getQueueMetrics(db.prisma, { scope: organizationScope('org-other') })).continuationsRecently).toEqual({ slices: 0, jobs: 0 });
    expect((await getQueueMetrics(db.prisma, { scope: adminScope() })).continuationsRecently.slices).toBeGreaterThanOrEqual(3);
  });

  it('lists concurrency keys with waiting or leased jobs, the most waiting first, counted in its scope', async () => {
    const key = (name: string) => `metrics-${name}-${Date.now()}`;
    const busy = key('busy');
    const quiet = key('quiet');
    const enqueue = (k: string, organizationId: string, limit: number) =>
      enqueueJob(db.prisma, { jobType: 'metrics.keyed', payload: {}, organizationId, concurrency: { key: k, limit } });
    for (let i = 0; i < 4; i += 1) await enqueue(busy, 'org-conc-a', 2);
    await enqueue(busy, 'org-conc-b', 2);
    await enqueue(quiet, 'org-conc-a', 1);
    // Two of busy's jobs leased (its limit), one of quiet's: the rest wait.
    const leased = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['metrics.keyed'], limit: 10, leaseSeconds: 60, markRunning: true });
    expect(leased).toHaveLength(3);
    const heldByB = leased.filter((j) => j.organizationId === 'org-conc-b').length;

    const admin = await getQueueMetrics(db.prisma, { scope: adminScope() });
    expect(admin.concurrency.keys.filter((k) => k.key === busy || k.key === quiet)).toEqual([
      { key: busy, limit: 2, leased: 2, waiting: 3, setBy: 'enqueue' },
      { key: quiet, limit: 1, leased: 1, waiting: 0, setBy: 'enqueue' },
    ]);
    expect(admin.concurrency.waiting).toBeGreaterThanOrEqual(3);
    expect(admin.concurrency.keyCount).toBeGreaterThanOrEqual(2);

    const a = await getQueueMetrics(db.prisma, { scope: organizationScope('org-conc-a') });
    expect(a.concurrency).toEqual({
      waiting: 3 - (1 - heldByB),
      keyCount: 2,
      keys: [
        { key: busy, limit: 2, leased: 2 - heldByB, waiting: 2 + heldByB, setBy: 'enqueue' },
        { key: quiet, limit: 1, leased: 1, waiting: 0, setBy: 'enqueue' },
      ],
    });
    // Another organization sees neither key; one with no keyed jobs sees nothing.
    const b = await getQueueMetrics(db.prisma, { scope: organizationScope('org-conc-b') });
    expect(b.concurrency.keys.map((k) => k.key)).toEqual([busy]);
    expect((await getQueueMetrics(db.prisma, { scope: organizationScope('org-conc-none') })).concurrency).toEqual({ waiting: 0, keyCount: 0, keys: [] });

    // An operator's limit shows as such.
    await setConcurrencyLimit(db.prisma, { key: busy, limit: 5 });
    const pinned = await getQueueMetrics(db.prisma, { scope: organizationScope('org-conc-b') });
    expect(pinned.concurrency.keys[0]).toMatchObject({ key: busy, limit: 5, setBy: 'operator' });
  });

  it('lists rate keys with waiting jobs, the most waiting first, with their tokens, counted in its scope', async () => {
    const key = (name: string) => `metrics-rate-${name}-${Date.now()}`;
    const busy = key('busy');
    const quiet = key('quiet');
    const enqueue = (k: string, organizationId: string) =>
      enqueueJob(db.prisma, { jobType: 'metrics.rated', payload: {}, organizationId, rateLimit: { key: k, limit: 2, periodMs: 3_600_000 } });
    for (let i = 0; i < 4; i += 1) await enqueue(busy, 'org-rate-a');
    await enqueue(busy, 'org-rate-b');
    await enqueue(quiet, 'org-rate-a');
    // busy's bucket holds 2 tokens, quiet's 2: three starts, and busy's other 3 jobs wait for a token.
    const leased = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['metrics.rated'], limit: 10, leaseSeconds: 60, markRunning: true });
    expect(leased).toHaveLength(3);
    const waitingOfB = 1 - leased.filter((j) => j.organizationId === 'org-rate-b').length;

    const admin = await getQueueMetrics(db.prisma, { scope: adminScope() });
    const mine = admin.rateLimits.keys.filter((k) => k.key === busy || k.key === quiet);
    // quiet has no job waiting: not listed. busy's bucket is empty but for the refill since the claim.
    expect(mine).toEqual([{ key: busy, limit: 2, periodMs: 3_600_000, burst: 2, tokens: expect.any(Number), waiting: 3, setBy: 'enqueue' }]);
    expect(mine[0]!.tokens).toBeLessThan(0.01);
    expect(admin.rateLimits.waiting).toBeGreaterThanOrEqual(3);
    expect(admin.rateLimits.keyCount).toBeGreaterThanOrEqual(1);

    const a = await getQueueMetrics(db.prisma, { scope: organizationScope('org-rate-a') });
    expect(a.rateLimits).toMatchObject({ waiting: 3 - waitingOfB, keyCount: 1, keys: [{ key: busy, waiting: 3 - waitingOfB }] });
    expect((await getQueueMetrics(db.prisma, { scope: organizationScope('org-rate-none') })).rateLimits).toEqual({ waiting: 0, keyCount: 0, keys: [] });

    // An operator's limit shows as such, with the bucket refilled at the old rate and capped at the new burst.
    await setRateLimit(db.prisma, { key: busy, limit: { limit: 100, periodMs: 1000, burst: 5 } });
    const pinned = await getQueueMetrics(db.prisma, { scope: adminScope(), now: new Date(Date.now() + 60_000) });
    expect(pinned.rateLimits.keys.find((k) => k.key === busy)).toMatchObject({ limit: 100, periodMs: 1000, burst: 5, tokens: 5, setBy: 'operator' });
  });

  it('refuses a missing scope with metrics.invalid_input naming the field', async () => {
    const error = await getQueueMetrics(db.prisma, {} as never).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'metrics.invalid_input')).toBe(true);
    expect((error as { field?: string }).field).toBe('scope');
  });
});
