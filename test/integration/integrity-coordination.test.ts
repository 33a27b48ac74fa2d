/**
 * The integrity checker on the coordination tables (active workflow keys and
 * append mutations) against seeded corruption: each corruption is written by
 * hand into this file's scratch database and the checker must name it with
 * its run id and what it expected; what the engine wrote itself is clean.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  appendWorkflowSteps,
  cancelWorkflowRun,
  enqueueOrGetActiveWorkflowRun,
  noOrganizationScope,
  organizationScope,
  releaseQuiescedActiveKeys,
  verifyIntegrity,
  workflow,
  type IntegrityViolation,
} from '../../src/index.js';
import { corrupter, only } from '../harness/corruption.js';
import { useTestDatabase } from '../harness/database.js';
import { claimAll, runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const ORG = 'org-coordination';
/** Holds 'sync:open' in ORG; its 'intake' window is open and the 'add-review' append added 'review' and 'notify'. */
let open = '';
/** Held 'sync:done' globally and finished: its claim was released at the end of the run. */
let done = '';
/** Canceled while its job was leased: it keeps 'sync:draining' until the canceled lease runs out. */
let draining = '';

beforeAll(async () => {
  const openRun = await enqueueOrGetActiveWorkflowRun(db.prisma, {
    ...workflow('coord.open').organization(ORG).job('pull', 'coord.pull', {}).external('intake').build(),
    activeKey: 'sync:open',
  });
  open = openRun.workflowRunId;
  const doneRun = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...workflow('coord.done').job('only', 'coord.only', {}).build(), activeKey: 'sync:done' });
  done = doneRun.workflowRunId;
  await runRunnableJobs(db.prisma);
  await appendWorkflowSteps(db.prisma, {
    workflowRunId: open,
    scope: organizationScope(ORG),
    mutationKey: 'add-review',
    window: 'intake',
    steps: [
      { key: 'review', kind: 'external' },
      { key: 'notify', kind: 'job', jobType: 'coord.notify', payload: { to: 'legal' } },
    ],
    edges: [
      { prerequisite: 'pull', dependent: 'review' },
      { prerequisite: 'review', dependent: 'notify', mode: 'on_terminal' },
    ],
  });
  const drainingRun = await enqueueOrGetActiveWorkflowRun(db.prisma, {
    ...workflow('coord.draining').job('slow', 'coord.slow', {}).build(),
    activeKey: 'sync:draining',
  });
  draining = drainingRun.workflowRunId;
  await claimAll(db.prisma, 'slow-worker');
  await cancelWorkflowRun(db.prisma, { workflowRunId: draining, scope: noOrganizationScope(), reason: 'operator' });
});

const corrupt = corrupter(db);

const claim = async (runId: string) =>
  (
    await db.prisma.$queryRaw<{ scope: string; released_at: Date | null }[]>`
    SELECT scope, released_at FROM runledger.workflow_active_keys WHERE workflow_run_id = ${runId}::uuid`
  )[0]!;

describe('verifyIntegrity on active keys and appends', () => {
  it('finds nothing wrong in what the engine wrote: a held key, a released one, one held by a draining cancellation, an append', async () => {
    expect(await claim(open)).toMatchObject({ scope: `organization:${ORG}`, released_at: null });
    expect((await claim(done)).released_at).not.toBeNull();
    expect((await claim(draining)).released_at).toBeNull();
    const report = await verifyIntegrity(db.prisma);
    expect(report.violations).toEqual([]);
    expect(report.checked.runs).toBe(3);
  });

  it("names a claim whose scope is not its run's organization", async () => {
    await corrupt(`UPDATE runledger.workflow_active_keys SET scope = 'organization:someone-else' WHERE workflow_run_id = $1`, [open]);
    const report = await verifyIntegrity(db.prisma);
    expect(report.violations).toEqual([
      expect.objectContaining({
        kind: 'active_key.scope_mismatch',
        workflowRunId: open,
        expected: { scope: `organization:${ORG}` },
        found: { scope: 'organization:someone-else', activeKey: 'sync:open' },
      }),
    ]);
    await corrupt(`UPDATE runledger.workflow_active_keys SET scope = $2 WHERE workflow_run_id = $1`, [open, `organization:${ORG}`]);
  });

  it('names two unreleased claims of one key (the unique index dropped), each with the other run', async () => {
    class Rollback extends Error {}
    let seen: IntegrityViolation[] = [];
    await expect(
      db.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe('DROP INDEX runledger.workflow_active_keys_claimed_uidx');
        await tx.$executeRaw`
          UPDATE runledger.workflow_active_keys SET released_at = NULL, scope = ${`organization:${ORG}`}, active_key = 'sync:open'
           WHERE workflow_run_id = ${done}::uuid`;
        seen = (await verifyIntegrity(tx, { workflowRunIds: [open, done] })).violations;
        throw new Rollback();
      }),
    ).rejects.toBeInstanceOf(Rollback);
    const duplicates = only(seen, 'active_key.duplicate_claim');
    expect(duplicates).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ workflowRunId: open, found: { scope: `organization:${ORG}`, activeKey: 'sync:open', otherWorkflowRunIds: [done] } }),
        expect.objectContaining({ workflowRunId: done, found: { scope: `organization:${ORG}`, activeKey: 'sync:open', otherWorkflowRunIds: [open] } }),
      ]),
    );
    expect(duplicates).toHaveLength(2);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it('names a claim released while its run is live, and one released while a canceled lease still ran', async () => {
    await corrupt('UPDATE runledger.workflow_active_keys SET released_at = clock_timestamp() WHERE workflow_run_id = ANY($1::uuid[])', [[open, draining]]);
    const report = await verifyIntegrity(db.prisma);
    const early = only(report.violations, 'active_key.released_early');
    expect(early).toHaveLength(2);
    expect(early).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ workflowRunId: open, found: expect.objectContaining({ status: 'RUNNING', canceledLeaseExpiresAt: null }) }),
        expect.objectContaining({
          workflowRunId: draining,
          found: expect.objectContaining({ status: 'CANCELED', canceledLeaseExpiresAt: expect.any(String) }),
        }),
      ]),
    );
    await corrupt('UPDATE runledger.workflow_active_keys SET released_at = NULL WHERE workflow_run_id = ANY($1::uuid[])', [[open, draining]]);
  });

  it('names a claim held long after its run ended and quiesced; the reaper sweep clears it', async () => {
    // The canceled lease ran out two minutes ago: its job row and its (canceled) lease row together.
    await corrupt(
      `WITH old AS (SELECT id, lease_expires_at FROM runledger.job_queue WHERE status = 'CANCELED' AND job_type = 'coord.slow'),
            moved AS (UPDATE runledger.job_queue jq SET lease_expires_at = now() - interval '2 minutes' FROM old WHERE jq.id = old.id
                      RETURNING jq.id, jq.lease_expires_at)
       UPDATE runledger.job_leases l SET expires_at = m.lease_expires_at FROM old o JOIN moved m ON m.id = o.id
        WHERE l.job_id = o.id AND l.expires_at = o.lease_expires_at`,
    );
    // The whole run happened three minutes earlier: its steps, jobs and attempts move back too, so time still follows cause.
    await corrupt(
      `UPDATE runledger.workflow_steps SET released_at = released_at - interval '3 minutes', started_at = started_at - interval '3 minutes',
              finished_at = finished_at - interval '3 minutes' WHERE workflow_run_id = $1`,
      [draining],
    );
    await corrupt(
      `UPDATE runledger.job_queue SET created_at = created_at - interval '3 minutes', next_run_at = next_run_at - interval '3 minutes',
              started_at = started_at - interval '3 minutes', finished_at = finished_at - interval '3 minutes'
        WHERE workflow_step_id IN (SELECT id FROM runledger.workflow_steps WHERE workflow_run_id = $1)`,
      [draining],
    );
    await corrupt(`UPDATE runledger.workflow_runs SET finished_at = now() - interval '3 minutes' WHERE id = $1`, [draining]);
    const report = await verifyIntegrity(db.prisma);
    expect(report.violations).toEqual([
      expect.objectContaining({
        kind: 'active_key.release_overdue',
        workflowRunId: draining,
        found: expect.objectContaining({ status: 'CANCELED', releasedAt: null }),
      }),
    ]);
    expect(await releaseQuiescedActiveKeys(db.prisma)).toBe(1);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);
  });

  it('names a mutation whose step count or edges disagree with the steps it added', async () => {
    await corrupt(`UPDATE runledger.workflow_mutations SET step_count = 3 WHERE workflow_run_id = $1 AND mutation_key = 'add-review'`, [open]);
    await corrupt(
      `DELETE FROM runledger.workflow_step_dependencies d USING runledger.workflow_steps s
        WHERE s.id = d.dependent_step_id AND s.workflow_run_id = $1 AND s.step_key = 'notify'`,
      [open],
    );
    const report = await verifyIntegrity(db.prisma, { workflowRunIds: [open] });
    expect(only(report.violations, 'mutation.step_count')).toEqual([
      expect.objectContaining({
        workflowRunId: open,
        expected: { mutationKey: 'add-review', stepCount: 2, missingStepKeys: [] },
        found: { mutationKey: 'add-review', stepCount: 3, missingStepKeys: [] },
      }),
    ]);
    expect(only(report.violations, 'mutation.edges')).toEqual([
      expect.objectContaining({
        workflowRunId: open,
        expected: {
          mutationKey: 'add-review',
          edges: [
            { prerequisite: 'review', dependent: 'notify', mode: 'ON_TERMINAL' },
            { prerequisite: 'pull', dependent: 'review', mode: 'ON_SUCCESS' },
          ],
        },
        found: { mutationKey: 'add-review', edges: [{ prerequisite: 'pull', dependent: 'review', mode: 'ON_SUCCESS' }] },
      }),
    ]);
  });
});
