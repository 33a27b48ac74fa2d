/**
 * Active workflow keys: one run per (scope, key) at a time, released when the
 * run is over and quiescent, decided under concurrency by the database.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cancelWorkflowRun,
  claimJobs,
  completeJob,
  enqueueOrGetActiveWorkflowRun,
  enqueueWorkflowRun,
  noOrganizationScope,
  isRunledgerError,
  organizationScope,
  releaseQuiescedActiveKeys,
  workflow,
  workflowRunHandle,
  type ActiveWorkflowOutcome,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { silentLogger } from '../../src/job/logger.js';
import { Reaper } from '../../src/worker/reaper.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
let clients: PrismaClient[];
beforeAll(() => {
  clients = Array.from({ length: 10 }, () => db.newClient({ max: 1 }));
});

const sync = (jobType: string) => workflow('customer.sync').job('pull', jobType, { n: 1 }).build();

async function claimsOf(
  activeKey: string,
  reader: Pick<PrismaClient, '$queryRaw'> = db.prisma,
): Promise<{ workflow_run_id: string; scope: string; released: boolean }[]> {
  return reader.$queryRaw`
    SELECT workflow_run_id, scope, released_at IS NOT NULL AS released FROM runledger.workflow_active_keys
     WHERE active_key = ${activeKey} ORDER BY claimed_at, workflow_run_id`;
}

async function runCount(workflowType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE workflow_type = ${workflowType}`;
  return row!.n;
}

async function finishAll(jobType: string): Promise<void> {
  const jobs = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 100, leaseSeconds: 60, markRunning: true });
  for (const job of jobs) await completeJob(db.prisma, { ...job, output: { done: true } });
}

describe('enqueueOrGetActiveWorkflowRun', () => {
  it('inserts a run that claims the key, then answers existing_active with the holder; a handle reads either', async () => {
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.basic'), activeKey: 'sync:basic' });
    expect(first).toMatchObject({ outcome: 'inserted', status: 'RUNNING' });
    const second = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.basic'), activeKey: 'sync:basic' });
    expect(second).toEqual({ outcome: 'existing_active', workflowRunId: first.workflowRunId, status: 'RUNNING' });
    expect(await claimsOf('sync:basic')).toEqual([{ workflow_run_id: first.workflowRunId, scope: 'global', released: false }]);
    const handle = workflowRunHandle(db.prisma, noOrganizationScope(), second.workflowRunId);
    expect(await handle.getStatus()).toBe('RUNNING');
  });

  it('scopes keys: the same key in two organizations and globally is three claims', async () => {
    const orgA = newId();
    const orgB = newId();
    const a = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.scope'), organizationId: orgA, activeKey: 'sync:scoped' });
    const b = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.scope'), organizationId: orgB, activeKey: 'sync:scoped' });
    const g = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.scope'), activeKey: 'sync:scoped' });
    expect([a.outcome, b.outcome, g.outcome]).toEqual(['inserted', 'inserted', 'inserted']);
    const againA = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.scope'), organizationId: orgA, activeKey: 'sync:scoped' });
    expect(againA).toMatchObject({ outcome: 'existing_active', workflowRunId: a.workflowRunId });
    expect((await claimsOf('sync:scoped')).map((c) => c.scope).sort()).toEqual(['global', `organization:${orgA}`, `organization:${orgB}`].sort());
    expect(await workflowRunHandle(db.prisma, organizationScope(orgA), againA.workflowRunId).getStatus()).toBe('RUNNING');
  });

  it('answers existing_idempotent for the same idempotency key and request, and refuses a different request or active key', async () => {
    const run = { ...sync('ak.idem'), idempotencyKey: 'idem-1' };
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, activeKey: 'sync:idem' });
    expect(first.outcome).toBe('inserted');
    expect(await enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, activeKey: 'sync:idem' })).toEqual({
      outcome: 'existing_idempotent',
      workflowRunId: first.workflowRunId,
      status: 'RUNNING',
    });
    await expect(enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, metadata: { other: true }, activeKey: 'sync:idem' })).rejects.toMatchObject({
      code: 'workflow.idempotency_conflict',
    });
    await expect(enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, activeKey: 'sync:idem-other' })).rejects.toMatchObject({
      code: 'workflow.idempotency_conflict',
    });
    // After the run ended and another run took the key, the retry still gets its own run.
    await finishAll('ak.idem');
    const other = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.idem'), activeKey: 'sync:idem' });
    expect(other.outcome).toBe('inserted');
    expect(await enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, activeKey: 'sync:idem' })).toEqual({
      outcome: 'existing_idempotent',
      workflowRunId: first.workflowRunId,
      status: 'SUCCEEDED',
    });
    expect(await runCount('customer.sync')).toBeGreaterThan(0);
  });

  it('refuses a blank or oversized key naming the field, writing nothing', async () => {
    const before = await runCount('customer.sync');
    for (const activeKey of ['', '   ', 'é'.repeat(257), 'a\u0000b']) {
      const error = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.bad'), activeKey }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'workflow.invalid_input', field: 'activeKey' });
    }
    await expect(enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.bad'), activeKey: 'x'.repeat(512) })).resolves.toMatchObject({ outcome: 'inserted' });
    expect(await runCount('customer.sync')).toBe(before + 1);
  });

  it('refuses REPEATABLE READ before any write, and a rolled-back host transaction claims nothing', async () => {
    const error = await db.prisma
      .$transaction(async (tx) => enqueueOrGetActiveWorkflowRun(tx, { ...sync('ak.iso'), activeKey: 'sync:iso' }), { isolationLevel: 'RepeatableRead' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'workflow.active_key_unsupported_isolation' });
    const rollback = new Error('host rolls back');
    // Only the host's own rollback may end the transaction: a refusal or a failed expectation inside must fail the test.
    await expect(
      db.prisma.$transaction(async (tx) => {
        const claimed = await enqueueOrGetActiveWorkflowRun(tx, { ...sync('ak.iso'), activeKey: 'sync:iso' });
        expect(claimed.outcome).toBe('inserted');
        expect(await claimsOf('sync:iso', tx)).toEqual([{ workflow_run_id: claimed.workflowRunId, scope: 'global', released: false }]);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await claimsOf('sync:iso')).toEqual([]);
    expect((await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.iso'), activeKey: 'sync:iso' })).outcome).toBe('inserted');
  });

  it('releases the key when the run succeeds, so the next enqueue inserts', async () => {
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.release'), activeKey: 'sync:release' });
    await finishAll('ak.release');
    expect(await claimsOf('sync:release')).toEqual([{ workflow_run_id: first.workflowRunId, scope: 'global', released: true }]);
    const next = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.release'), activeKey: 'sync:release' });
    expect(next.outcome).toBe('inserted');
    expect(next.workflowRunId).not.toBe(first.workflowRunId);
  });

  it('keeps the key of a canceled run while a canceled lease is live; the sweep or the next enqueue releases it once quiescent', async () => {
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.cancel'), activeKey: 'sync:cancel' });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ak.cancel'], limit: 1, leaseSeconds: 300, markRunning: true });
    expect(lease).toBeDefined();
    await cancelWorkflowRun(db.prisma, { workflowRunId: first.workflowRunId, scope: noOrganizationScope() });
    expect(await claimsOf('sync:cancel')).toEqual([{ workflow_run_id: first.workflowRunId, scope: 'global', released: false }]);
    expect(await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.cancel'), activeKey: 'sync:cancel' })).toEqual({
      outcome: 'existing_active',
      workflowRunId: first.workflowRunId,
      status: 'CANCELED',
    });
    expect(await releaseQuiescedActiveKeys(db.prisma)).toBe(0);

    // The canceled handler's lease runs out (moved into the past rather than waited for).
    await expireLeases(db.prisma, lease!.jobId);
    expect(await releaseQuiescedActiveKeys(db.prisma)).toBe(1);
    expect(await claimsOf('sync:cancel')).toEqual([{ workflow_run_id: first.workflowRunId, scope: 'global', released: true }]);

    // The next enqueue releases a quiescent holder itself, without the sweep.
    const second = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.cancel'), activeKey: 'sync:cancel' });
    const [lease2] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ak.cancel'], limit: 1, leaseSeconds: 300, markRunning: true });
    await cancelWorkflowRun(db.prisma, { workflowRunId: second.workflowRunId, scope: noOrganizationScope() });
    await expireLeases(db.prisma, lease2!.jobId);
    const third = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.cancel'), activeKey: 'sync:cancel' });
    expect(third.outcome).toBe('inserted');
    expect((await claimsOf('sync:cancel')).map((c) => c.released)).toEqual([true, true, false]);
  });

  it("is released by the worker's reaper loop once the canceled lease has run out", async () => {
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.reaper'), activeKey: 'sync:reaper' });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ak.reaper'], limit: 1, leaseSeconds: 300, markRunning: true });
    await cancelWorkflowRun(db.prisma, { workflowRunId: first.workflowRunId, scope: noOrganizationScope() });
    await expireLeases(db.prisma, lease!.jobId);
    const reaper = new Reaper({ db: db.prisma, intervalMs: 10, limit: 10, logger: silentLogger, onRetried: () => undefined, onError: () => undefined });
    reaper.start();
    try {
      const deadline = Date.now() + 10_000;
      while (!(await claimsOf('sync:reaper'))[0]!.released) {
        if (Date.now() > deadline) throw new Error('the reaper did not release the key within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await reaper.stop();
    }
    // Released only after every canceled lease of the run had run out.
    const [late] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_active_keys k
        JOIN runledger.workflow_steps ws ON ws.workflow_run_id = k.workflow_run_id
        JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE k.workflow_run_id = ${first.workflowRunId}::uuid AND jq.status = 'CANCELED' AND jq.lease_expires_at > k.released_at`;
    expect(late!.n).toBe(0);
  });

  it('releases at once when a run is canceled with no live lease', async () => {
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.cancel-pending'), activeKey: 'sync:cancel-pending' });
    await cancelWorkflowRun(db.prisma, { workflowRunId: first.workflowRunId, scope: noOrganizationScope() });
    expect(await claimsOf('sync:cancel-pending')).toEqual([{ workflow_run_id: first.workflowRunId, scope: 'global', released: true }]);
  });

  it('inserts exactly one run when 10 connections enqueue the same key at once', async () => {
    for (let round = 0; round < 3; round += 1) {
      const key = `sync:race-${round}`;
      const start = barrier(clients.length);
      const outcomes = await Promise.all(
        clients.map(async (client): Promise<ActiveWorkflowOutcome | string> => {
          await start();
          try {
            return await enqueueOrGetActiveWorkflowRun(client, { ...workflow('customer.race').job('pull', 'ak.race', { round }).build(), activeKey: key });
          } catch (error) {
            return isRunledgerError(error) ? error.code : String(error);
          }
        }),
      );
      const inserted = outcomes.filter((o) => typeof o !== 'string' && o.outcome === 'inserted') as ActiveWorkflowOutcome[];
      expect(inserted).toHaveLength(1);
      for (const outcome of outcomes)
        expect(outcome).toEqual({ outcome: expect.stringMatching(/inserted|existing_active/), workflowRunId: inserted[0]!.workflowRunId, status: 'RUNNING' });
      expect(await claimsOf(key)).toHaveLength(1);
    }
    expect(await runCount('customer.race')).toBe(3);
  });

  it('round-trips claim and mutation rows through the ORM', async () => {
    const { workflowRunId } = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...sync('ak.orm'), activeKey: 'sync:orm' });
    const claim = await db.prisma.workflowActiveKey.findUniqueOrThrow({ where: { workflowRunId }, include: { run: true } });
    expect(claim).toMatchObject({ scope: 'global', activeKey: 'sync:orm', releasedAt: null });
    expect(claim.run.id).toBe(workflowRunId);
    const mutation = await db.prisma.workflowMutation.create({ data: { workflowRunId, mutationKey: 'm-orm', request: { steps: [] }, stepCount: 1 } });
    expect(await db.prisma.workflowMutation.findUniqueOrThrow({ where: { workflowRunId_mutationKey: { workflowRunId, mutationKey: 'm-orm' } } })).toEqual(
      mutation,
    );
    // The partial unique index: a second unreleased claim of the key is refused by the database itself.
    const { workflowRunId: other } = await enqueueWorkflowRun(db.prisma, sync('ak.orm'));
    await expect(db.prisma.workflowActiveKey.create({ data: { workflowRunId: other, scope: 'global', activeKey: 'sync:orm' } })).rejects.toThrow();
    await expect(db.prisma.workflowActiveKey.create({ data: { workflowRunId: other, scope: 'global', activeKey: 'sync:orm-free' } })).resolves.toMatchObject({
      releasedAt: null,
    });
  });
});
