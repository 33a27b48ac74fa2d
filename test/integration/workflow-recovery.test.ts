/**
 * Workflow recovery: full and failed-only recovery of a run with a failed
 * middle step, the carry rules (on-terminal edges, external steps), appends
 * rebuilt, settings kept, idempotency per request key (also under five
 * concurrent connections), every refusal with nothing written, tenant scope,
 * active keys, and the lineage reads.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runUntilIdle } from '../../src/testing/index.js';
import {
  appendWorkflowSteps,
  cancelWorkflowRun,
  claimJobs,
  completeExternalWorkflowStep,
  completeJob,
  defineJob,
  failJob,
  TerminalError,
  enqueueOrGetActiveWorkflowRun,
  enqueueWorkflowRun,
  getWorkflowRun,
  isRunledgerError,
  listWorkflowRecoveries,
  noOrganizationScope,
  organizationScope,
  recoverWorkflowRun,
  verifyIntegrity,
  workflow,
  workflowRunHandle,
  type RecoverWorkflowRunInput,
  type RecoverWorkflowRunResult,
} from '../../src/index.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const scope = noOrganizationScope();

/**
 * Runs every runnable job whose type starts with `prefix` (each test uses its own): types in `fail` dead-letter,
 * the rest succeed with { ran: type }. Returns the types run, sorted.
 */
async function drive(prefix: string, fail: readonly string[] = []): Promise<string[]> {
  const ran: string[] = [];
  for (;;) {
    const types = await db.prisma.$queryRaw<{ job_type: string }[]>`
      SELECT DISTINCT job_type FROM runledger.job_queue WHERE status = 'PENDING' AND starts_with(job_type, ${prefix})`;
    if (types.length === 0) return ran.sort();
    const jobs = await claimJobs(db.prisma, { workerId: 'w', jobTypes: types.map((t) => t.job_type), limit: 100, leaseSeconds: 60, markRunning: true });
    for (const job of jobs) {
      if (fail.includes(job.jobType)) await failJob(db.prisma, { ...job, error: { code: 'test.failed', message: 'failed on purpose' }, retryable: false });
      else await completeJob(db.prisma, { ...job, output: { ran: job.jobType } });
      ran.push(job.jobType);
    }
  }
}

/** a -> (b, c) -> d, b fails: COMPLETED_WITH_ERRORS with a and c succeeded, d canceled. */
async function failedDiamond(tag: string, organizationId?: string) {
  const { workflowRunId } = await enqueueWorkflowRun(db.prisma, {
    ...workflow(`recover.${tag}`, { tag })
      .job('a', `${tag}.a`, { n: 1 }, { priority: 7, maxAttempts: 3, timeoutSeconds: 45, resource: `res:${tag}`, backoff: { baseDelayMs: 2_000 } })
      .job('b', `${tag}.b`, { n: 2 })
      .job('c', `${tag}.c`, { n: 3 })
      .job('d', `${tag}.d`, { n: 4 })
      .afterSuccess('b', ['a'])
      .afterSuccess('c', ['a'])
      .afterSuccess('d', ['b', 'c'])
      .resultStep('d')
      .build(),
    ...(organizationId ? { organizationId } : {}),
  });
  expect(await drive(`${tag}.`, [`${tag}.b`])).toEqual([`${tag}.a`, `${tag}.b`, `${tag}.c`]);
  expect((await getWorkflowRun(db.prisma, { scope: organizationId ? organizationScope(organizationId) : scope, workflowRunId })).status).toBe(
    'COMPLETED_WITH_ERRORS',
  );
  return workflowRunId;
}

async function counts(reader: Pick<PrismaClient, '$queryRaw'> = db.prisma) {
  const [row] = await reader.$queryRaw<{ runs: number; recoveries: number; jobs: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.workflow_runs) AS runs, (SELECT count(*)::int FROM runledger.workflow_recoveries) AS recoveries,
           (SELECT count(*)::int FROM runledger.job_queue) AS jobs`;
  return row!;
}

async function refusal(input: RecoverWorkflowRunInput): Promise<{ code: string; field?: string; details?: unknown }> {
  const before = await counts();
  const error = await recoverWorkflowRun(db.prisma, input).then(
    () => null,
    (e: unknown) => e,
  );
  expect(isRunledgerError(error)).toBe(true);
  expect(await counts()).toEqual(before);
  const e = error as { code: string; field?: string; details?: unknown };
  return { code: e.code, ...(e.field ? { field: e.field } : {}), details: e.details };
}

async function expectClean(...workflowRunIds: string[]) {
  const report = await verifyIntegrity(db.prisma, { workflowRunIds });
  expect(report.violations).toEqual([]);
}

describe('recoverWorkflowRun', () => {
  it('full: builds a new run of every step, keeps per-step settings, never touches the source', async () => {
    const source = await failedDiamond('full');
    const sourceSteps = await stepsByKey(db.prisma, source);
    // Enqueued without an idempotency key, it still stored its canonical request, in the same insert.
    const [stored] = await db.prisma.$queryRaw<{ idempotency_key: string | null; steps: number }[]>`
      SELECT idempotency_key, jsonb_array_length(enqueue_request->'steps') AS steps FROM runledger.workflow_runs WHERE id = ${source}::uuid`;
    expect(stored).toEqual({ idempotency_key: null, steps: 4 });
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'r1', reason: 'provider outage' });
    expect(recovery).toEqual({
      outcome: 'inserted',
      sourceRunId: source,
      recoveryRunId: expect.any(String),
      status: 'RUNNING',
      mode: 'full',
      carriedStepKeys: [],
    });
    expect(recovery.recoveryRunId).not.toBe(source);
    await expectClean(source, recovery.recoveryRunId);

    const [aJob] = await db.prisma.$queryRaw<
      { priority: number; max_attempts: number; timeout_seconds: number; resource_key: string; backoff_base_ms: number; payload: unknown }[]
    >`
      SELECT jq.priority, jq.max_attempts, jq.timeout_seconds, jq.resource_key, jq.backoff_base_ms, jq.payload
        FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${recovery.recoveryRunId}::uuid AND ws.step_key = 'a'`;
    expect(aJob).toEqual({ priority: 7, max_attempts: 3, timeout_seconds: 45, resource_key: 'res:full', backoff_base_ms: 2_000, payload: { n: 1 } });

    expect(await drive('full.')).toEqual(['full.a', 'full.b', 'full.c', 'full.d']);
    const run = await getWorkflowRun(db.prisma, { scope, workflowRunId: recovery.recoveryRunId });
    expect(run).toMatchObject({
      status: 'SUCCEEDED',
      workflowType: 'recover.full',
      metadata: { tag: 'full' },
      resultStepKey: 'd',
      result: { ran: 'full.d' },
      idempotencyKey: null,
    });
    expect(await stepsByKey(db.prisma, source)).toEqual(sourceSteps);
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId: source })).status).toBe('COMPLETED_WITH_ERRORS');
    await expectClean(source, recovery.recoveryRunId);
  });

  it('failed_only: carries the succeeded steps with their outputs and runs only the failed step and what follows it', async () => {
    const source = await failedDiamond('fo');
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'r1', reason: 'retry b', mode: 'failed_only' });
    expect(recovery).toMatchObject({ outcome: 'inserted', status: 'RUNNING', mode: 'failed_only', carriedStepKeys: ['a', 'c'] });
    const steps = await stepsByKey(db.prisma, recovery.recoveryRunId);
    expect(steps.a).toMatchObject({
      status: 'SUCCEEDED',
      output: { ran: 'fo.a' },
      jobId: null,
      statusReason: 'workflow.recovery_carried',
      dependencyCountTotal: 0,
    });
    expect(steps.c).toMatchObject({ status: 'SUCCEEDED', output: { ran: 'fo.c' }, jobId: null, dependencyCountTotal: 1, dependencyCountPending: 0 });
    expect(steps.b).toMatchObject({ status: 'ENQUEUED', jobId: expect.any(String), dependencyCountTotal: 1, dependencyCountPending: 0, priority: 0 });
    expect(steps.d).toMatchObject({ status: 'BLOCKED', jobId: null, dependencyCountTotal: 2, dependencyCountPending: 1, dependencyCountUnsatisfied: 0 });
    await expectClean(source, recovery.recoveryRunId);

    // Handlers run only for the re-run steps; d reads c's carried output as a prerequisite.
    expect(await drive('fo.')).toEqual(['fo.b', 'fo.d']);
    const [dInputs] = await db.prisma.$queryRaw<{ c_output: unknown }[]>`
      SELECT p.output AS c_output FROM runledger.workflow_steps p WHERE p.workflow_run_id = ${recovery.recoveryRunId}::uuid AND p.step_key = 'c'`;
    expect(dInputs!.c_output).toEqual({ ran: 'fo.c' });
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: recovery.recoveryRunId })).toMatchObject({ status: 'SUCCEEDED', result: { ran: 'fo.d' } });
    await expectClean(source, recovery.recoveryRunId);
  });

  it('failed_only with real handlers: only the re-run steps execute, and they read the carried outputs', async () => {
    const calls: string[] = [];
    let failB = true;
    const a = defineJob('wk.a', z.object({}), () => {
      calls.push('a');
      return { from: 'a' };
    });
    const b = defineJob('wk.b', z.object({}), () => {
      calls.push('b');
      if (failB) throw new TerminalError('b is down');
      return { from: 'b' };
    });
    const c = defineJob('wk.c', z.object({}), () => {
      calls.push('c');
      return { from: 'c' };
    });
    const d = defineJob('wk.d', z.object({}), (_payload, ctx) => {
      calls.push('d');
      return { sawB: ctx.prerequisites.get('b', b)?.output ?? null, sawC: ctx.prerequisites.get('c', c)?.output ?? null };
    });
    const { workflowRunId: source } = await enqueueWorkflowRun(
      db.prisma,
      workflow('recover.worker')
        .job('a', a, {})
        .job('b', b, {})
        .job('c', c, {})
        .job('d', d, {})
        .afterSuccess('b', ['a'])
        .afterSuccess('c', ['a'])
        .afterSuccess('d', ['b', 'c'])
        .resultStep('d')
        .build(),
    );
    await runUntilIdle(db.prisma, [a, b, c, d]);
    expect(calls.sort()).toEqual(['a', 'b', 'c']);

    calls.length = 0;
    failB = false;
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k', reason: 'b is back', mode: 'failed_only' });
    await runUntilIdle(db.prisma, [a, b, c, d]);
    expect(calls).toEqual(['b', 'd']);
    expect(await workflowRunHandle(db.prisma, scope, recovery.recoveryRunId).getResult({ timeoutMs: 5_000 })).toEqual({
      sawB: { from: 'b' },
      sawC: { from: 'c' },
    });
    await expectClean(source, recovery.recoveryRunId);
  });

  it('failed_only: runs again a succeeded step behind an on-terminal edge from a re-run step; carries succeeded external steps', async () => {
    const { workflowRunId: source } = await enqueueWorkflowRun(
      db.prisma,
      workflow('recover.edges')
        .external('approve')
        .job('a', 'ed.a', {})
        .afterSuccess('a', ['approve'])
        .job('b', 'ed.b', {})
        .afterSuccess('b', ['a'])
        .job('c', 'ed.c', {})
        .afterTerminal('c', ['b'])
        .external('sign')
        .afterSuccess('sign', ['approve'])
        .build(),
    );
    await completeExternalWorkflowStep(db.prisma, {
      workflowRunId: source,
      stepKey: 'approve',
      scope,
      outcome: { status: 'succeeded', output: { by: 'ana' } },
    });
    await completeExternalWorkflowStep(db.prisma, { workflowRunId: source, stepKey: 'sign', scope, outcome: { status: 'failed' } });
    expect(await drive('ed.', ['ed.b'])).toEqual(['ed.a', 'ed.b', 'ed.c']);
    expect((await stepsByKey(db.prisma, source)).c!.status).toBe('SUCCEEDED');

    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'r', reason: 'again', mode: 'failed_only' });
    expect(recovery.carriedStepKeys).toEqual(['a', 'approve']);
    const steps = await stepsByKey(db.prisma, recovery.recoveryRunId);
    expect(steps.approve).toMatchObject({ status: 'SUCCEEDED', output: { by: 'ana' } });
    expect(steps.sign).toMatchObject({ status: 'WAITING_FOR_EXTERNAL' });
    expect(steps.b).toMatchObject({ status: 'ENQUEUED' });
    expect(steps.c).toMatchObject({ status: 'BLOCKED', output: null });
    await expectClean(source, recovery.recoveryRunId);
    expect(await drive('ed.')).toEqual(['ed.b', 'ed.c']);
    await completeExternalWorkflowStep(db.prisma, { workflowRunId: recovery.recoveryRunId, stepKey: 'sign', scope, outcome: { status: 'succeeded' } });
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId: recovery.recoveryRunId })).status).toBe('SUCCEEDED');
    await expectClean(source, recovery.recoveryRunId);
  });

  it('starts WAITING_FOR_EXTERNAL when only external steps are released', async () => {
    const { workflowRunId: source } = await enqueueWorkflowRun(
      db.prisma,
      workflow('recover.ext').job('a', 'ext.a', {}).external('gate').afterSuccess('gate', ['a']).build(),
    );
    await drive('ext.');
    await completeExternalWorkflowStep(db.prisma, { workflowRunId: source, stepKey: 'gate', scope, outcome: { status: 'canceled' } });
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'r', reason: 'reopen the gate', mode: 'failed_only' });
    expect(recovery).toMatchObject({ status: 'WAITING_FOR_EXTERNAL', carriedStepKeys: ['a'] });
    await expectClean(recovery.recoveryRunId);
  });

  it('rebuilds appended steps and edges from their stored requests', async () => {
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, workflow('recover.append').job('a', 'ap.a', {}).external('window').build());
    await appendWorkflowSteps(db.prisma, {
      workflowRunId: source,
      scope,
      mutationKey: 'm1',
      window: 'window',
      steps: [{ kind: 'job', key: 'x', jobType: 'ap.x', payload: { appended: true }, priority: 3, resource: 'res:x' }],
      edges: [{ prerequisite: 'a', dependent: 'x', mode: 'on_terminal' }],
    });
    await completeExternalWorkflowStep(db.prisma, { workflowRunId: source, stepKey: 'window', scope, outcome: { status: 'succeeded' } });
    expect(await drive('ap.', ['ap.x'])).toEqual(['ap.a', 'ap.x']);

    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'r', reason: 'x failed', mode: 'failed_only' });
    expect(recovery.carriedStepKeys).toEqual(['a', 'window']);
    const steps = await stepsByKey(db.prisma, recovery.recoveryRunId);
    expect(steps.x).toMatchObject({ status: 'ENQUEUED', payload: { appended: true }, priority: 3, dependencyCountTotal: 1 });
    const [edge] = await db.prisma.$queryRaw<{ release_mode: string }[]>`
      SELECT release_mode FROM runledger.workflow_step_dependencies WHERE dependent_step_id = ${steps.x!.id}::uuid`;
    expect(edge).toEqual({ release_mode: 'ON_TERMINAL' });
    expect(await drive('ap.')).toEqual(['ap.x']);
    await expectClean(source, recovery.recoveryRunId);
  });

  it('recovers a recovery (its own snapshot), and returns the same recovery for the same request key', async () => {
    const source = await failedDiamond('chain');
    const first = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k', reason: 'one', mode: 'failed_only' });
    expect(await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k', reason: 'one', mode: 'failed_only' })).toEqual({
      ...first,
      outcome: 'existing',
    });
    expect(await drive('chain.', ['chain.b'])).toEqual(['chain.b']);
    const second = await recoverWorkflowRun(db.prisma, { sourceRunId: first.recoveryRunId, scope, requestKey: 'k', reason: 'two', mode: 'failed_only' });
    expect(second.carriedStepKeys).toEqual(['a', 'c']);
    expect(await drive('chain.')).toEqual(['chain.b', 'chain.d']);
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId: second.recoveryRunId })).recoveredFrom).toMatchObject({
      sourceRunId: first.recoveryRunId,
      reason: 'two',
    });
  });

  it('refuses a reused request key with another reason or mode (workflow.recovery_request_conflict)', async () => {
    const source = await failedDiamond('conflict');
    const first = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k', reason: 'one' });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'k', reason: 'other' })).toMatchObject({
      code: 'workflow.recovery_request_conflict',
      details: { recoveryRunId: first.recoveryRunId },
    });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'k', reason: 'one', mode: 'failed_only' })).toMatchObject({
      code: 'workflow.recovery_request_conflict',
    });
    // Another key is another recovery only when asked again.
    expect((await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k2', reason: 'one', again: true })).recoveryRunId).not.toBe(
      first.recoveryRunId,
    );
  });

  it('refuses a second recovery under another key, naming the first, returns it for the same key, and recovers again when asked', async () => {
    const source = await failedDiamond('once');
    const first = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'click-1', reason: 'outage' });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'click-2', reason: 'outage' })).toEqual({
      code: 'workflow.recovery_already_recovered',
      details: { sourceRunId: source, recoveryRunId: first.recoveryRunId, recoveries: 1 },
    });
    // The same key (a retried click) returns the recovery it made, with or without `again`.
    expect(await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'click-1', reason: 'outage' })).toEqual({
      ...first,
      outcome: 'existing',
    });
    expect(await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'click-1', reason: 'outage', again: true })).toEqual({
      ...first,
      outcome: 'existing',
    });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'click-2', reason: 'outage', again: 'yes' as never })).toMatchObject({
      code: 'workflow.invalid_input',
      field: 'again',
    });
    const second = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'click-2', reason: 'outage', again: true });
    expect(second.outcome).toBe('inserted');
    expect(second.recoveryRunId).not.toBe(first.recoveryRunId);
    // The refusal now names the latest of the two.
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'click-3', reason: 'outage' })).toMatchObject({
      code: 'workflow.recovery_already_recovered',
      details: { recoveryRunId: second.recoveryRunId, recoveries: 2 },
    });
    // Both runs link to each other in the run read.
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: source })).toMatchObject({
      recoveredFrom: null,
      recoveries: { count: 2, latest: { recoveryRunId: second.recoveryRunId } },
    });
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: second.recoveryRunId })).toMatchObject({
      recoveredFrom: { sourceRunId: source, recoveryRunId: second.recoveryRunId },
    });
  });

  it('makes one recovery when 5 connections recover the same source under 5 different keys at once', async () => {
    const clients = Array.from({ length: 5 }, () => db.newClient({ max: 1 }));
    for (let round = 0; round < 3; round += 1) {
      const source = await failedDiamond(`twice${round}`);
      const start = barrier(clients.length);
      const settled = await Promise.allSettled(
        clients.map(async (client, index): Promise<RecoverWorkflowRunResult> => {
          await start();
          return recoverWorkflowRun(client, { sourceRunId: source, scope, requestKey: `click-${index}`, reason: 'race', mode: 'failed_only' });
        }),
      );
      const won = settled.filter((r): r is PromiseFulfilledResult<RecoverWorkflowRunResult> => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      expect(won[0]!.value.outcome).toBe('inserted');
      const refused = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as { code: string; details: unknown });
      expect(refused.map((e) => e.code)).toEqual(Array(4).fill('workflow.recovery_already_recovered'));
      for (const e of refused) expect(e.details).toMatchObject({ recoveryRunId: won[0]!.value.recoveryRunId });
      const [row] = await db.prisma.$queryRaw<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM runledger.workflow_recoveries WHERE source_run_id = ${source}::uuid`;
      expect(row!.n).toBe(1);
      expect(await drive(`twice${round}.`)).toEqual([`twice${round}.b`, `twice${round}.d`]);
    }
  });

  it('makes one recovery when 5 connections recover the same source with the same key at once', async () => {
    const clients = Array.from({ length: 5 }, () => db.newClient({ max: 1 }));
    for (let round = 0; round < 3; round += 1) {
      const source = await failedDiamond(`race${round}`);
      const start = barrier(clients.length);
      const results = await Promise.all(
        clients.map(async (client): Promise<RecoverWorkflowRunResult> => {
          await start();
          return recoverWorkflowRun(client, { sourceRunId: source, scope, requestKey: 'same', reason: 'race', mode: 'failed_only' });
        }),
      );
      expect(results.filter((r) => r.outcome === 'inserted')).toHaveLength(1);
      expect(new Set(results.map((r) => r.recoveryRunId)).size).toBe(1);
      const [row] = await db.prisma.$queryRaw<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM runledger.workflow_recoveries WHERE source_run_id = ${source}::uuid`;
      expect(row!.n).toBe(1);
      expect(await drive(`race${round}.`)).toEqual([`race${round}.b`, `race${round}.d`]);
    }
  });

  it('refuses, writing nothing: a run not finished, not quiesced, without a snapshot, rebuilt differently, with nothing to re-run', async () => {
    const { workflowRunId: live } = await enqueueWorkflowRun(db.prisma, workflow('recover.live').job('a', 'rf.live', {}).build());
    expect(await refusal({ sourceRunId: live, scope, requestKey: 'k', reason: 'r' })).toMatchObject({
      code: 'workflow.recovery_source_not_terminal',
      details: { status: 'RUNNING' },
    });

    // A canceled job whose handler may still run keeps its lease expiry: recovering would overlap it.
    const [leased] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['rf.live'], limit: 1, leaseSeconds: 60, markRunning: true });
    expect(leased).toBeDefined();
    await cancelWorkflowRun(db.prisma, { workflowRunId: live, scope });
    expect(await refusal({ sourceRunId: live, scope, requestKey: 'k', reason: 'r' })).toMatchObject({
      code: 'workflow.recovery_source_not_quiesced',
      details: { retryAfter: expect.any(String) },
    });

    const legacy = await failedDiamond('legacy');
    await db.prisma.$executeRaw`UPDATE runledger.workflow_runs SET enqueue_request = NULL WHERE id = ${legacy}::uuid`;
    expect(await refusal({ sourceRunId: legacy, scope, requestKey: 'k', reason: 'r' })).toMatchObject({ code: 'workflow.recovery_snapshot_missing' });

    const skewed = await failedDiamond('skewed');
    await db.prisma.$executeRaw`UPDATE runledger.workflow_steps SET priority = 99 WHERE workflow_run_id = ${skewed}::uuid AND step_key = 'c'`;
    expect(await refusal({ sourceRunId: skewed, scope, requestKey: 'k', reason: 'r' })).toMatchObject({ code: 'workflow.recovery_snapshot_unsafe' });
    // A stored step setting the enqueue rules do not know (a snapshot from a newer version, or a forged one): refused, never dropped.
    const future = await failedDiamond('future');
    await db.prisma.$executeRaw`
      UPDATE runledger.workflow_runs
         SET enqueue_request = jsonb_set(enqueue_request, '{steps,0,futureSetting}', 'true'::jsonb)
       WHERE id = ${future}::uuid`;
    expect(await refusal({ sourceRunId: future, scope, requestKey: 'k', reason: 'r' })).toMatchObject({ code: 'workflow.recovery_snapshot_unsafe' });
    const extraEdge = await failedDiamond('edge');
    await db.prisma.$executeRaw`
      INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
      SELECT p.id, d.id, p.workflow_run_id, 'ON_TERMINAL' FROM runledger.workflow_steps p JOIN runledger.workflow_steps d ON d.workflow_run_id = p.workflow_run_id
       WHERE p.workflow_run_id = ${extraEdge}::uuid AND p.step_key = 'a' AND d.step_key = 'd'`;
    expect(await refusal({ sourceRunId: extraEdge, scope, requestKey: 'k', reason: 'r' })).toMatchObject({ code: 'workflow.recovery_snapshot_unsafe' });

    const { workflowRunId: done } = await enqueueWorkflowRun(db.prisma, workflow('recover.done').job('a', 'rf.done', {}).build());
    await drive('rf.done');
    expect(await refusal({ sourceRunId: done, scope, requestKey: 'k', reason: 'r', mode: 'failed_only' })).toMatchObject({
      code: 'workflow.recovery_nothing_to_rerun',
    });
    // A full recovery of a succeeded run runs it again.
    expect((await recoverWorkflowRun(db.prisma, { sourceRunId: done, scope, requestKey: 'k', reason: 'r' })).status).toBe('RUNNING');
  });

  it('refuses bad input with a coded validation error naming the field, and a stronger isolation before anything', async () => {
    const source = await failedDiamond('input');
    expect(await refusal({ sourceRunId: source, scope, requestKey: ' ', reason: 'r' })).toMatchObject({ code: 'workflow.invalid_input', field: 'requestKey' });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'k', reason: '' })).toMatchObject({ code: 'workflow.invalid_input', field: 'reason' });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'k', reason: 'r', mode: 'some' as never })).toMatchObject({
      code: 'workflow.invalid_input',
      field: 'mode',
    });
    expect(await refusal({ sourceRunId: 'nope', scope, requestKey: 'k', reason: 'r' })).toMatchObject({ code: 'workflow.invalid_input', field: 'sourceRunId' });
    const error = await db.prisma
      .$transaction(async (tx) => recoverWorkflowRun(tx, { sourceRunId: source, scope, requestKey: 'k', reason: 'r' }), { isolationLevel: 'Serializable' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'workflow.recovery_unsupported_isolation' });
  });

  it('joins the caller transaction: a rollback leaves nothing', async () => {
    const source = await failedDiamond('joined');
    const before = await counts();
    const rollback = new Error('host rolls back');
    // Only the host's own rollback may end the transaction: a refusal or a failed expectation inside must fail the test.
    await expect(
      db.prisma.$transaction(async (tx) => {
        const recovery = await recoverWorkflowRun(tx, { sourceRunId: source, scope, requestKey: 'k', reason: 'r' });
        expect((await getWorkflowRun(tx, { scope, workflowRunId: recovery.recoveryRunId })).recoveredFrom?.sourceRunId).toBe(source);
        expect(await counts(tx)).toMatchObject({ runs: before.runs + 1, recoveries: before.recoveries + 1 });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await counts()).toEqual(before);
  });

  it("reports another organization's run as not found, writing nothing", async () => {
    const source = await failedDiamond('tenant', 'org-a');
    expect(await refusal({ sourceRunId: source, scope: organizationScope('org-b'), requestKey: 'k', reason: 'r' })).toMatchObject({
      code: 'workflow.run_not_found',
    });
    expect(await refusal({ sourceRunId: source, scope, requestKey: 'k', reason: 'r' })).toMatchObject({ code: 'workflow.run_not_found' });
    const recovery = await recoverWorkflowRun(db.prisma, {
      sourceRunId: source,
      scope: organizationScope('org-a'),
      requestKey: 'k',
      reason: 'r',
      mode: 'failed_only',
    });
    expect((await getWorkflowRun(db.prisma, { scope: organizationScope('org-a'), workflowRunId: recovery.recoveryRunId })).organizationId).toBe('org-a');
    await expect(listWorkflowRecoveries(db.prisma, { runId: source, scope: organizationScope('org-b') })).rejects.toMatchObject({
      code: 'workflow.run_not_found',
    });
  });

  it("takes the source's active key; refuses while another run holds it", async () => {
    const keyed = (tag: string) => ({ ...workflow('recover.keyed').job('a', `ak.${tag}`, {}).build(), activeKey: 'sync:1' });
    const source = await enqueueOrGetActiveWorkflowRun(db.prisma, keyed('one'));
    await drive('ak.one', ['ak.one']);
    const holder = await enqueueOrGetActiveWorkflowRun(db.prisma, keyed('two'));
    expect(holder.outcome).toBe('inserted');
    expect(await refusal({ sourceRunId: source.workflowRunId, scope, requestKey: 'k', reason: 'r' })).toMatchObject({
      code: 'workflow.recovery_active_key_held',
      details: { workflowRunId: holder.workflowRunId },
    });
    await drive('ak.two');
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source.workflowRunId, scope, requestKey: 'k', reason: 'r' });
    const claims = await db.prisma.$queryRaw<{ workflow_run_id: string }[]>`
      SELECT workflow_run_id FROM runledger.workflow_active_keys WHERE active_key = 'sync:1' AND released_at IS NULL`;
    expect(claims).toEqual([{ workflow_run_id: recovery.recoveryRunId }]);
    expect(await enqueueOrGetActiveWorkflowRun(db.prisma, keyed('three'))).toMatchObject({ outcome: 'existing_active', workflowRunId: recovery.recoveryRunId });
  });

  it('reads lineage both ways: recoveredFrom, recoveries, listWorkflowRecoveries pages, a handle', async () => {
    const source = await failedDiamond('lineage');
    const first = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k1', reason: 'first' });
    const second = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k2', reason: 'second', mode: 'failed_only', again: true });
    const read = await getWorkflowRun(db.prisma, { scope, workflowRunId: source });
    expect(read.recoveredFrom).toBeNull();
    expect(read.recoveries).toEqual({
      count: 2,
      latest: {
        sourceRunId: source,
        recoveryRunId: second.recoveryRunId,
        requestKey: 'k2',
        reason: 'second',
        mode: 'failed_only',
        createdAt: expect.any(Date),
        recoveryStatus: 'RUNNING',
      },
    });
    const handle = workflowRunHandle(db.prisma, scope, first.recoveryRunId);
    expect(await handle.getRun()).toMatchObject({
      recoveredFrom: { sourceRunId: source, recoveryRunId: first.recoveryRunId, mode: 'full', reason: 'first' },
      recoveries: { count: 0, latest: null },
    });

    const page1 = await listWorkflowRecoveries(db.prisma, { runId: source, scope, limit: 1 });
    expect(page1.items.map((r) => r.recoveryRunId)).toEqual([first.recoveryRunId]);
    expect(page1.nextCursor).not.toBeNull();
    const page2 = await listWorkflowRecoveries(db.prisma, { runId: source, scope, limit: 1, cursor: page1.nextCursor! });
    expect(page2).toEqual({ items: [expect.objectContaining({ recoveryRunId: second.recoveryRunId, requestKey: 'k2' })], nextCursor: null });
    expect(await listWorkflowRecoveries(db.prisma, { runId: first.recoveryRunId, scope })).toEqual({ items: [], nextCursor: null });
    await expect(listWorkflowRecoveries(db.prisma, { runId: source, scope, cursor: 'x' })).rejects.toMatchObject({
      code: 'workflow.invalid_input',
      field: 'cursor',
    });
  });
});
