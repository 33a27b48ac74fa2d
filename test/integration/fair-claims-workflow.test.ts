/**
 * Fairness keys on workflow job steps (src/workflow/, migration 20270101000004_step_fairness): a step's
 * `fairness` is stored in workflow_steps.fair_key / fair_weight and copied to its job when the step starts
 * (root), is released later, or is appended, so the step's jobs take turns with other keys' like direct jobs.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  appendWorkflowSteps,
  cancelWorkflowRun,
  claimJobs,
  completeJobs,
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

const db = useTestDatabase();

let counter = 0;
/** A job type and a key of this test alone, so tests sharing the database never meet. */
const fresh = (): { type: string; key: string } => {
  counter += 1;
  return { type: `fairwf.t${counter}.${Date.now()}`, key: `fairwf-key-${counter}-${Date.now()}` };
};

async function claim(jobType: string, limit = 10): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 60 });
}

interface StepFairness {
  step_key: string;
  step_key_fair: string | null;
  step_weight: number | null;
  job_key_fair: string | null;
  job_weight: number | null;
}

/** Each step's fairness key and weight and its job's (null: no job yet), by step key. */
async function stepFairness(workflowRunId: string): Promise<StepFairness[]> {
  return db.prisma.$queryRaw`
    SELECT ws.step_key, ws.fair_key AS step_key_fair, ws.fair_weight AS step_weight, jq.fair_key AS job_key_fair, jq.fair_weight AS job_weight
      FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
     WHERE ws.workflow_run_id = ${workflowRunId}::uuid ORDER BY ws.step_key`;
}

const row = (step: string, key: string | null, weight: number | null, job: boolean): StepFairness => ({
  step_key: step,
  step_key_fair: key,
  step_weight: weight,
  job_key_fair: job ? key : null,
  job_weight: job ? weight : null,
});

async function counts(): Promise<{ jobs: number; runs: number; steps: number }> {
  const [found] = await db.prisma.$queryRaw<{ jobs: number; runs: number; steps: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue) AS jobs, (SELECT count(*)::int FROM runledger.workflow_runs) AS runs,
           (SELECT count(*)::int FROM runledger.workflow_steps) AS steps`;
  return found!;
}

const countBy = (jobs: readonly ClaimedJob[]): Record<string, number> =>
  Object.fromEntries([...new Set(jobs.map((job) => job.fairKey))].map((key) => [String(key), jobs.filter((job) => job.fairKey === key).length]));

describe('fairness keys on workflow steps', () => {
  it('carries a step’s key and weight to its job at start, when released later, when appended and when recovered', async () => {
    const { type, key } = fresh();
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('fairwf.carry')
        .job('a', type, { k: 'a' }, { fairness: { key, weight: 3 } })
        .job('later', type, { k: 'later' }, { fairness: { key: `${key}-later` } })
        .afterSuccess('later', ['a'])
        .build(),
    );
    // The weight defaults to 1; the later step's job does not exist yet.
    expect(await stepFairness(workflowRunId)).toEqual([row('a', key, 3, true), row('later', `${key}-later`, 1, false)]);
    const [a] = await claim(type);
    expect(a).toMatchObject({ fairKey: key, payload: { k: 'a' } });
    await completeJobs(db.prisma, [{ ...a! }]);
    const [later] = await claim(type);
    // Released by its prerequisite's success: the job carries the step's key (left LEASED: the run stays open).
    expect(later).toMatchObject({ fairKey: `${key}-later`, payload: { k: 'later' } });

    // Appended: one step released at once, one blocked on it (released with its key when `now` succeeds).
    const append = (weight: number) => ({
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [
        { kind: 'job' as const, key: 'now', jobType: type, payload: { k: 'now' }, fairness: { key: `${key}-ap`, weight } },
        { kind: 'job' as const, key: 'blocked', jobType: type, payload: { k: 'blocked' }, fairness: { key: `${key}-ap2`, weight: 1000 } },
      ],
      edges: [{ prerequisite: 'now', dependent: 'blocked' }],
    });
    expect((await appendWorkflowSteps(db.prisma, append(2))).outcome).toBe('appended');
    // The same append again is already applied (the weight is part of what the mutation key is bound to) ...
    expect((await appendWorkflowSteps(db.prisma, append(2))).outcome).toBe('already_applied');
    // ... and another weight under the same mutation key is a conflicting retry.
    const changed = await appendWorkflowSteps(db.prisma, append(4)).catch((e: unknown) => e);
    expect(isRunledgerError(changed, 'workflow.append_conflicting_retry')).toBe(true);
    const [now] = await claim(type);
    expect(now).toMatchObject({ fairKey: `${key}-ap`, payload: { k: 'now' } });
    await completeJobs(db.prisma, [{ ...now! }]);
    const [blocked] = await claim(type);
    expect(blocked).toMatchObject({ fairKey: `${key}-ap2`, payload: { k: 'blocked' } });
    expect(await stepFairness(workflowRunId)).toEqual([
      row('a', key, 3, true),
      row('blocked', `${key}-ap2`, 1000, true),
      row('later', `${key}-later`, 1, true),
      row('now', `${key}-ap`, 2, true),
    ]);

    // A recovery re-creates the steps with their keys (the setting is in the stored request).
    const source = await enqueueWorkflowRun(
      db.prisma,
      workflow('fairwf.rec')
        .job('x', `${type}.none`, {}, { fairness: { key: `${key}-rec`, weight: 5 } })
        .build(),
    );
    await cancelWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId: source.workflowRunId });
    const recovered = await recoverWorkflowRun(db.prisma, {
      scope: noOrganizationScope(),
      sourceRunId: source.workflowRunId,
      requestKey: `${key}-rec`,
      reason: 'test',
    });
    expect(await stepFairness(recovered.recoveryRunId)).toEqual([row('x', `${key}-rec`, 5, true)]);
  });

  it('takes the step’s key from the definition, computed from the payload and the run’s organization, unless the step names one', async () => {
    const { type, key } = fresh();
    const computed = defineJob(type, z.object({ tenant: z.string() }), async () => undefined, {
      fairness: { key: (p: { tenant: string }, job) => `${key}-${p.tenant}-${job.organizationId ?? 'none'}`, weight: 4 },
    });
    const fixed = defineJob(`${type}.fixed`, z.object({}), async () => undefined, { fairness: { key: `${key}-fixed` } });
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('fairwf.def')
        .job('a', computed, { tenant: 'acme' })
        .job('b', computed, { tenant: 'acme' }, { fairness: { key: `${key}-own` } })
        .job('c', fixed, {})
        .afterSuccess('c', ['a'])
        // Named after the steps: the key is computed when the run is built, with this organization.
        .organization('org-1')
        .build(),
    );
    expect(await stepFairness(workflowRunId)).toEqual([
      row('a', `${key}-acme-org-1`, 4, true),
      row('b', `${key}-own`, 1, true),
      row('c', `${key}-fixed`, 1, false),
    ]);
    // Without an organization the function is told null.
    const unscoped = await enqueueWorkflowRun(db.prisma, workflow('fairwf.def').job('a', computed, { tenant: 'beta' }).build());
    expect(await stepFairness(unscoped.workflowRunId)).toEqual([row('a', `${key}-beta-none`, 4, true)]);
    // The released step's job carries the definition's key too.
    const started = await claim(type);
    expect(started.map((job) => job.fairKey).sort()).toEqual([`${key}-acme-org-1`, `${key}-beta-none`, `${key}-own`]);
    await completeJobs(
      db.prisma,
      started.map((job) => ({ ...job })),
    );
    expect((await stepFairness(workflowRunId))[2]).toEqual(row('c', `${key}-fixed`, 1, true));
  });

  it('lets steps of different runs take turns: a run with many steps does not hold back another’s', async () => {
    const { type, key } = fresh();
    const many = Array.from({ length: 20 }, (_, i) => i).reduce(
      (builder, i) => builder.job(`a${i}`, type, { i }, { fairness: { key: `${key}-a` } }),
      workflow('fairwf.turns'),
    );
    const few = workflow('fairwf.turns')
      .job('b0', type, { i: 0 }, { fairness: { key: `${key}-b` } })
      .job('b1', type, { i: 1 }, { fairness: { key: `${key}-b` } });
    // Run A first: without keys a claim of 4 would take four of its steps.
    await enqueueWorkflowRuns(db.prisma, [many.build(), few.build()]);
    const jobs = await claim(type, 4);
    expect(countBy(jobs)).toEqual({ [`${key}-a`]: 2, [`${key}-b`]: 2 });
  });

  it('refuses a bad step setting, naming the field, and writes nothing', async () => {
    const { type, key } = fresh();
    const before = await counts();
    const bad: [unknown, string][] = [
      [{ key, weight: 0 }, 'steps.0.fairness.weight'],
      [{ key, weight: 1.5 }, 'steps.0.fairness.weight'],
      [{ key, weight: 1001 }, 'steps.0.fairness.weight'],
      [{ key: '' }, 'steps.0.fairness.key'],
      [{ key: '   ' }, 'steps.0.fairness.key'],
      [{ weight: 2 }, 'steps.0.fairness.key'],
      [{ key, extra: 1 }, 'steps.0.fairness.extra'],
    ];
    for (const [fairness, field] of bad) {
      const run = { workflowType: 'fairwf.bad', steps: [{ key: 'a', kind: 'job', jobType: type, payload: {}, fairness }] };
      const error = await enqueueWorkflowRun(db.prisma, run as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.invalid_input'), JSON.stringify(fairness)).toBe(true);
      expect((error as { field?: string }).field, JSON.stringify(fairness)).toBe(field);
    }
    const external = await enqueueWorkflowRun(db.prisma, {
      workflowType: 'fairwf.bad',
      steps: [{ key: 'e', kind: 'external', fairness: { key } }],
    } as never).catch((e: unknown) => e);
    expect(isRunledgerError(external, 'workflow.external_step_job_settings')).toBe(true);
    expect((external as { field?: string }).field).toBe('steps.0.fairness');
    expect(await counts()).toEqual(before);

    // Appends: the same checks, before anything is written.
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('fairwf.bad').external('open').build());
    const appended = await counts();
    for (const [steps, field, code] of [
      [[{ kind: 'job', key: 'x', jobType: type, payload: {}, fairness: { key, weight: 0 } }], 'steps.0.fairness.weight', 'workflow.invalid_input'],
      [
        [
          { kind: 'job', key: 'x', jobType: type, payload: {} },
          { kind: 'job', key: 'y', jobType: type, payload: {}, fairness: { key: '' } },
        ],
        'steps.1.fairness.key',
        'workflow.invalid_input',
      ],
      [[{ kind: 'external', key: 'z', fairness: { key } }], 'steps.0.fairness', 'workflow.external_step_job_settings'],
    ] as const) {
      const error = await appendWorkflowSteps(db.prisma, { workflowRunId, scope: noOrganizationScope(), mutationKey: 'bad', steps } as never).catch(
        (e: unknown) => e,
      );
      expect(isRunledgerError(error, code), field).toBe(true);
      expect((error as { field?: string }).field).toBe(field);
    }
    expect(await counts()).toEqual(appended);
  });

  it('makes the fairness part of the run’s idempotency request: another key or weight is a conflict', async () => {
    const { type, key } = fresh();
    const runKey = `${key}-run`;
    const run = (fairness?: { key: string; weight?: number }) => ({
      ...workflow('fairwf.idem')
        .job('a', type, {}, fairness === undefined ? {} : { fairness })
        .build(),
      idempotencyKey: runKey,
    });
    const first = await enqueueWorkflowRun(db.prisma, run({ key }));
    // The weight spelled out as its default is the same request.
    expect(await enqueueWorkflowRun(db.prisma, run({ key, weight: 1 }))).toMatchObject({ workflowRunId: first.workflowRunId, disposition: 'existing' });
    for (const other of [{ key, weight: 2 }, { key: `${key}-other` }, undefined]) {
      const error = await enqueueWorkflowRun(db.prisma, run(other)).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.idempotency_conflict'), JSON.stringify(other)).toBe(true);
    }
    // A run stored without a key compares equal to its duplicate (a null fairness is left out of the request).
    const plain = { ...workflow('fairwf.idem').job('a', type, {}).build(), idempotencyKey: `${runKey}-plain` };
    const stored = await enqueueWorkflowRun(db.prisma, plain);
    expect(await enqueueWorkflowRun(db.prisma, plain)).toMatchObject({ workflowRunId: stored.workflowRunId, disposition: 'existing' });
    const [snapshot] = await db.prisma.$queryRaw<{ request: { steps: Record<string, unknown>[] } }[]>`
      SELECT enqueue_request AS request FROM runledger.workflow_runs WHERE id = ${stored.workflowRunId}::uuid`;
    expect(snapshot!.request.steps[0]).not.toHaveProperty('fairness');
  });
});
