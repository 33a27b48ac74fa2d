/**
 * Rate limits on workflow job steps (src/workflow/, migration 20270101000002_rate_limits): a step's `rateLimit`
 * is stored in workflow_steps.rate_key and copied to its job when the step starts (root), is released later,
 * or is appended; the key's bucket is written with the step's setting when the run starts (or the append is
 * applied), and only once nothing can refuse the enqueue. The clock is moved by writing the bucket's
 * `refilled_at` back, never by sleeping.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  appendWorkflowSteps,
  cancelWorkflowRun,
  claimJobs,
  completeJobs,
  enqueueJob,
  enqueueWorkflowRun,
  enqueueWorkflowRuns,
  isRunledgerError,
  noOrganizationScope,
  recoverWorkflowRun,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { useTestDatabase } from '../harness/database.js';
import { ageBucket, bucket } from '../harness/key-rows.js';

const db = useTestDatabase();

let counter = 0;
/** A job type and a key of this test alone, so tests sharing the database never meet. */
const fresh = (): { type: string; key: string } => {
  counter += 1;
  return { type: `ratewf.t${counter}`, key: `ratewf-key-${counter}-${Date.now()}` };
};

async function claim(jobType: string, limit = 10): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 60, markRunning: true });
}

const names = (jobs: readonly ClaimedJob[]): string[] => jobs.map((j) => (j.payload as { k: string }).k).sort();

/** Each step's rate key and its job's (null: no job yet), by step key. */
async function stepKeys(workflowRunId: string): Promise<{ step_key: string; step_rate: string | null; job_rate: string | null }[]> {
  return db.prisma.$queryRaw`
    SELECT ws.step_key, ws.rate_key AS step_rate, jq.rate_key AS job_rate
      FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
     WHERE ws.workflow_run_id = ${workflowRunId}::uuid ORDER BY ws.step_key`;
}

async function counts(): Promise<{ jobs: number; runs: number; steps: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; runs: number; steps: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue) AS jobs, (SELECT count(*)::int FROM runledger.workflow_runs) AS runs,
           (SELECT count(*)::int FROM runledger.workflow_steps) AS steps`;
  return row!;
}

describe('rate limits on workflow steps', () => {
  it('carries a step’s rate key to its job at start, when released later, when appended and when recovered', async () => {
    const { type, key } = fresh();
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('ratewf.carry')
        .job('a', type, { k: 'a' }, { rateLimit: { key, limit: 5, periodMs: 60_000 } })
        .job('later', type, { k: 'later' }, { rateLimit: { key: `${key}-later`, limit: 2, periodMs: 1000, burst: 4 } })
        .afterSuccess('later', ['a'])
        .build(),
    );
    // Both keys' buckets exist from the start, full, with the steps' settings (burst defaulting to the limit).
    expect(await bucket(db.prisma, key)).toMatchObject({ max_starts: 5, period_ms: 60_000, burst: 5, tokens: 5, set_by: 'enqueue' });
    expect(await bucket(db.prisma, `${key}-later`)).toMatchObject({ max_starts: 2, period_ms: 1000, burst: 4, tokens: 4 });
    expect(await stepKeys(workflowRunId)).toEqual([
      { step_key: 'a', step_rate: key, job_rate: key },
      { step_key: 'later', step_rate: `${key}-later`, job_rate: null },
    ]);
    const [a] = await claim(type);
    expect(a).toMatchObject({ rateKey: key, payload: { k: 'a' } });
    expect((await bucket(db.prisma, key))!.tokens).toBeCloseTo(4, 2);
    await completeJobs(db.prisma, [{ ...a! }]);
    // Released by its prerequisite's success: the job carries the step's key and takes its token.
    const [later] = await claim(type);
    expect(later).toMatchObject({ rateKey: `${key}-later`, payload: { k: 'later' } });
    expect((await bucket(db.prisma, `${key}-later`))!.tokens).toBeCloseTo(3, 2);

    // Appended: one step released at once, one blocked on another (its bucket written now, before its job).
    await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [
        { kind: 'job', key: 'now', jobType: type, payload: { k: 'now' }, rateLimit: { key: `${key}-ap`, limit: 3, periodMs: 2000 } },
        { kind: 'job', key: 'blocked', jobType: type, payload: { k: 'blocked' }, rateLimit: { key: `${key}-ap2`, limit: 6, periodMs: 500, burst: 1 } },
      ],
      edges: [{ prerequisite: 'now', dependent: 'blocked' }],
    });
    expect(await bucket(db.prisma, `${key}-ap`)).toMatchObject({ max_starts: 3, period_ms: 2000, burst: 3, tokens: 3 });
    expect(await bucket(db.prisma, `${key}-ap2`)).toMatchObject({ max_starts: 6, period_ms: 500, burst: 1, tokens: 1 });
    // The same append again is already applied (the setting is part of what the mutation key is bound to) ...
    const again = await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [
        { kind: 'job', key: 'blocked', jobType: type, payload: { k: 'blocked' }, rateLimit: { key: `${key}-ap2`, limit: 6, periodMs: 500, burst: 1 } },
        { kind: 'job', key: 'now', jobType: type, payload: { k: 'now' }, rateLimit: { key: `${key}-ap`, limit: 3, periodMs: 2000, burst: 3 } },
      ],
      edges: [{ prerequisite: 'now', dependent: 'blocked' }],
    });
    expect(again.outcome).toBe('already_applied');
    // ... and another setting under the same mutation key is a conflicting retry.
    const changed = await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [
        { kind: 'job', key: 'now', jobType: type, payload: { k: 'now' }, rateLimit: { key: `${key}-ap`, limit: 4, periodMs: 2000 } },
        { kind: 'job', key: 'blocked', jobType: type, payload: { k: 'blocked' }, rateLimit: { key: `${key}-ap2`, limit: 6, periodMs: 500, burst: 1 } },
      ],
      edges: [{ prerequisite: 'now', dependent: 'blocked' }],
    }).catch((e: unknown) => e);
    expect(isRunledgerError(changed, 'workflow.append_conflicting_retry')).toBe(true);
    expect(await bucket(db.prisma, `${key}-ap`)).toMatchObject({ max_starts: 3 });
    const [now] = await claim(type);
    expect(now).toMatchObject({ rateKey: `${key}-ap`, payload: { k: 'now' } });
    await completeJobs(db.prisma, [{ ...now! }]);
    const [blocked] = await claim(type);
    expect(blocked).toMatchObject({ rateKey: `${key}-ap2`, payload: { k: 'blocked' } });
    expect(await stepKeys(workflowRunId)).toEqual([
      { step_key: 'a', step_rate: key, job_rate: key },
      { step_key: 'blocked', step_rate: `${key}-ap2`, job_rate: `${key}-ap2` },
      { step_key: 'later', step_rate: `${key}-later`, job_rate: `${key}-later` },
      { step_key: 'now', step_rate: `${key}-ap`, job_rate: `${key}-ap` },
    ]);

    // A recovery re-creates the steps with their keys (the setting is in the stored request).
    const source = await enqueueWorkflowRun(
      db.prisma,
      workflow('ratewf.rec')
        .job('x', `${type}.none`, {}, { rateLimit: { key: `${key}-rec`, limit: 2, periodMs: 1000 } })
        .build(),
    );
    await cancelWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId: source.workflowRunId });
    const recovered = await recoverWorkflowRun(db.prisma, {
      scope: noOrganizationScope(),
      sourceRunId: source.workflowRunId,
      requestKey: `${key}-rec`,
      reason: 'test',
    });
    expect(await stepKeys(recovered.recoveryRunId)).toEqual([{ step_key: 'x', step_rate: `${key}-rec`, job_rate: `${key}-rec` }]);
  });

  it('takes the step’s key from the definition, computed from the payload, unless the step names one', async () => {
    const { type, key } = fresh();
    const definition = defineJob(type, z.object({ tenant: z.string() }), async () => undefined, {
      rateLimit: { key: (p: { tenant: string }) => `${key}-${p.tenant}`, limit: 7, periodMs: 1000, burst: 2 },
    });
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('ratewf.def')
        .job('a', definition, { tenant: 'acme' })
        .job('b', definition, { tenant: 'acme' }, { rateLimit: { key: `${key}-own`, limit: 1, periodMs: 5000 } })
        .build(),
    );
    expect(await stepKeys(workflowRunId)).toEqual([
      { step_key: 'a', step_rate: `${key}-acme`, job_rate: `${key}-acme` },
      { step_key: 'b', step_rate: `${key}-own`, job_rate: `${key}-own` },
    ]);
    expect(await bucket(db.prisma, `${key}-acme`)).toMatchObject({ max_starts: 7, period_ms: 1000, burst: 2 });
    expect(await bucket(db.prisma, `${key}-own`)).toMatchObject({ max_starts: 1, period_ms: 5000, burst: 1 });
  });

  it('starts the steps’ jobs only as the key’s tokens allow, across runs, leaving the rest PENDING', async () => {
    const { type, key } = fresh();
    const rateLimit = { key, limit: 2, periodMs: 60_000 };
    const runs = await enqueueWorkflowRuns(db.prisma, [
      workflow('ratewf.tokens')
        .job('r1a', type, { k: 'r1a' }, { rateLimit })
        .job('r1b', type, { k: 'r1b' }, { rateLimit })
        .job('r1c', type, { k: 'r1c' }, { rateLimit })
        .build(),
      workflow('ratewf.tokens').job('r2a', type, { k: 'r2a' }, { rateLimit }).job('r2free', type, { k: 'r2free' }).build(),
    ]);
    expect(runs.map((r) => r.disposition)).toEqual(['inserted', 'inserted']);
    // A full bucket of 2: two keyed steps start, the unkeyed one too; the claim's other slots stay unused.
    const first = await claim(type);
    expect(first).toHaveLength(3);
    expect(names(first)).toContain('r2free');
    expect(first.filter((j) => j.rateKey === key)).toHaveLength(2);
    expect(await claim(type)).toEqual([]);
    const [waiting] = await db.prisma.$queryRaw<{ n: number; attempts: number }[]>`
      SELECT count(*)::int AS n, max(attempt)::int AS attempts FROM runledger.job_queue
       WHERE rate_key = ${key} AND status = 'PENDING'`;
    expect(waiting).toEqual({ n: 2, attempts: 0 });
    // Half a period later: one token (2 per 60 s).
    await ageBucket(db.prisma, key, 30_000);
    const second = await claim(type);
    expect(second).toHaveLength(1);
    expect(await claim(type)).toEqual([]);
    // A period later: the last one (the bucket holds at most 2, so one is left).
    await ageBucket(db.prisma, key, 60_000);
    const last = await claim(type);
    expect(last).toHaveLength(1);
    expect(names([...first, ...second, ...last])).toEqual(['r1a', 'r1b', 'r1c', 'r2a', 'r2free']);
    expect((await bucket(db.prisma, key))!.tokens).toBeCloseTo(1, 2);
  });

  it('refuses a bad step setting or two settings of one key, naming the field, and writes nothing', async () => {
    const { type, key } = fresh();
    const before = await counts();
    const bad: [unknown, string][] = [
      [{ key: '', limit: 2, periodMs: 1000 }, 'steps.0.rateLimit.key'],
      [{ key, limit: 0, periodMs: 1000 }, 'steps.0.rateLimit.limit'],
      [{ key, limit: 1.5, periodMs: 1000 }, 'steps.0.rateLimit.limit'],
      [{ key, periodMs: 1000 }, 'steps.0.rateLimit.limit'],
      [{ key, limit: 2, periodMs: 0 }, 'steps.0.rateLimit.periodMs'],
      [{ key, limit: 2, periodMs: 8 * 24 * 3600 * 1000 }, 'steps.0.rateLimit.periodMs'],
      [{ key, limit: 2, periodMs: 1000, burst: 0 }, 'steps.0.rateLimit.burst'],
      [{ key, limit: 2, periodMs: 1000, extra: 1 }, 'steps.0.rateLimit.extra'],
    ];
    for (const [rateLimit, field] of bad) {
      const run = { workflowType: 'ratewf.bad', steps: [{ key: 'a', kind: 'job', jobType: type, payload: {}, rateLimit }] };
      const error = await enqueueWorkflowRun(db.prisma, run as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.invalid_input'), JSON.stringify(rateLimit)).toBe(true);
      expect((error as { field?: string }).field, JSON.stringify(rateLimit)).toBe(field);
    }
    // One setting per key in a run (the burst defaulted counts: 2 per second is burst 2, not 3).
    const twoSettings = await enqueueWorkflowRun(
      db.prisma,
      workflow('ratewf.bad')
        .job('a', type, {}, { rateLimit: { key, limit: 2, periodMs: 1000 } })
        .job('b', type, {}, { rateLimit: { key, limit: 2, periodMs: 1000, burst: 2 } })
        .job('c', type, {}, { rateLimit: { key, limit: 2, periodMs: 1000, burst: 3 } })
        .build(),
    ).catch((e: unknown) => e);
    expect(isRunledgerError(twoSettings, 'workflow.invalid_input')).toBe(true);
    expect((twoSettings as { field?: string }).field).toBe('steps.2.rateLimit');
    const inBatch = await enqueueWorkflowRuns(db.prisma, [
      workflow('ratewf.bad').job('a', type, {}).build(),
      workflow('ratewf.bad')
        .job('a', type, {}, { rateLimit: { key, limit: 2, periodMs: 1000 } })
        .job('b', type, {}, { rateLimit: { key, limit: 2, periodMs: 2000 } })
        .build(),
    ]).catch((e: unknown) => e);
    expect((inBatch as { field?: string }).field).toBe('1.steps.1.rateLimit');
    expect(await counts()).toEqual(before);
    expect(await bucket(db.prisma, key)).toBeUndefined();

    // Appends: the same checks, before anything is written.
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('ratewf.bad').external('open').build());
    const appended = await counts();
    for (const [steps, field] of [
      [[{ kind: 'job', key: 'x', jobType: type, payload: {}, rateLimit: { key, limit: 2, periodMs: -1 } }], 'steps.0.rateLimit.periodMs'],
      [
        [
          { kind: 'job', key: 'x', jobType: type, payload: {}, rateLimit: { key, limit: 2, periodMs: 1000 } },
          { kind: 'job', key: 'y', jobType: type, payload: {}, rateLimit: { key, limit: 3, periodMs: 1000 } },
        ],
        'steps.1.rateLimit',
      ],
    ] as const) {
      const error = await appendWorkflowSteps(db.prisma, { workflowRunId, scope: noOrganizationScope(), mutationKey: 'bad', steps } as never).catch(
        (e: unknown) => e,
      );
      expect(isRunledgerError(error, 'workflow.invalid_input'), field).toBe(true);
      expect((error as { field?: string }).field).toBe(field);
    }
    expect(await counts()).toEqual(appended);
    expect(await bucket(db.prisma, key)).toBeUndefined();
  });

  it('leaves no bucket behind when an idempotency conflict refuses a run in a host transaction; a duplicate writes none', async () => {
    const { type, key } = fresh();
    const runKey = `${key}-run`;
    await enqueueWorkflowRun(db.prisma, { ...workflow('ratewf.idem').job('a', type, {}).build(), idempotencyKey: runKey });
    await db.prisma.$transaction(async (tx) => {
      const runs = await enqueueWorkflowRuns(tx, [
        {
          ...workflow('ratewf.idem')
            .job('a', type, {}, { rateLimit: { key: `${key}-wf`, limit: 2, periodMs: 1000 } })
            .job('b', type, {}, { rateLimit: { key: `${key}-wf-later`, limit: 3, periodMs: 1000 } })
            .afterSuccess('b', ['a'])
            .build(),
          idempotencyKey: `${runKey}-fresh`,
        },
        { ...workflow('ratewf.idem').job('b', type, {}).build(), idempotencyKey: runKey },
      ]).catch((e: unknown) => e);
      expect(isRunledgerError(runs, 'workflow.idempotency_conflict')).toBe(true);
      // The same key with a rate limit the stored run does not have is another request.
      const single = await enqueueWorkflowRun(tx, {
        ...workflow('ratewf.idem')
          .job('a', type, {}, { rateLimit: { key: `${key}-single`, limit: 2, periodMs: 1000 } })
          .build(),
        idempotencyKey: runKey,
      }).catch((e: unknown) => e);
      expect(isRunledgerError(single, 'workflow.idempotency_conflict')).toBe(true);
    });
    for (const suffix of ['wf', 'wf-later', 'single']) expect(await bucket(db.prisma, `${key}-${suffix}`)).toBeUndefined();
    // The same run without the conflict writes its keys' buckets, the later step's too.
    const fresh1 = {
      ...workflow('ratewf.idem')
        .job('a', type, {}, { rateLimit: { key: `${key}-wf`, limit: 2, periodMs: 1000 } })
        .job('b', type, {}, { rateLimit: { key: `${key}-wf-later`, limit: 3, periodMs: 1000 } })
        .afterSuccess('b', ['a'])
        .build(),
      idempotencyKey: `${runKey}-fresh`,
    };
    const [inserted] = await db.prisma.$transaction(async (tx) => enqueueWorkflowRuns(tx, [fresh1]));
    expect(inserted!.disposition).toBe('inserted');
    expect(await bucket(db.prisma, `${key}-wf`)).toMatchObject({ max_starts: 2, burst: 2 });
    expect(await bucket(db.prisma, `${key}-wf-later`)).toMatchObject({ max_starts: 3, burst: 3 });
    // A job sets the key's bucket otherwise; the run's duplicate (same request) writes nothing over it.
    await enqueueJob(db.prisma, { jobType: type, payload: {}, rateLimit: { key: `${key}-wf`, limit: 9, periodMs: 9000 } });
    for (const client of ['root', 'host'] as const) {
      const [again] =
        client === 'root' ? await enqueueWorkflowRuns(db.prisma, [fresh1]) : await db.prisma.$transaction(async (tx) => enqueueWorkflowRuns(tx, [fresh1]));
      expect(again).toMatchObject({ workflowRunId: inserted!.workflowRunId, disposition: 'existing' });
      expect(await bucket(db.prisma, `${key}-wf`)).toMatchObject({ max_starts: 9, period_ms: 9000, burst: 9 });
    }
  });
});
