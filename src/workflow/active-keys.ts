/**
 * Active workflow keys: "only one sync per customer at a time". A run
 * enqueued with `activeKey` claims that key in its scope (global, or its
 * organization) until it is over; another enqueue of the key meanwhile gets
 * the run that holds it instead of a second run.
 *
 * Invariants (table `workflow_active_keys`, one row per keyed run, kept as
 * history once released):
 *   - at most one unreleased row per (scope, active_key): a partial unique
 *     index, and enqueues of one key serialised by its advisory lock (rung 0
 *     in locking.ts), so ten concurrent enqueues insert exactly one run;
 *   - a claim is released (`released_at` set) only once its run is terminal
 *     AND no canceled job of the run still has a live lease (a CANCELED job
 *     keeps its lease expiry as the quiescence marker: its handler may still
 *     be running, and a new run of the same key must not overlap it);
 *   - release happens where a run ends (the status recompute in
 *     run-status.ts, cancellation in cancel.ts) when the run is quiescent
 *     then; otherwise later, by `releaseQuiescedActiveKeys` (the reaper's
 *     sweep) or by the next enqueue of the key, which releases a quiescent
 *     terminal holder itself before claiming. So correctness never waits for
 *     the reaper; the sweep only keeps the table honest for readers.
 *
 * Outcomes of `enqueueOrGetActiveWorkflowRun`, decided in this order under the
 * key's lock:
 *   1. `existing_idempotent`: the run has an idempotency key that an earlier
 *      request with the same run request and the same active key used (a
 *      different request is `workflow.idempotency_conflict`);
 *   2. `existing_active`: another run holds the key (its id and status);
 *   3. `inserted`: a new run, which now holds the key.
 * Needs READ COMMITTED (each statement must see the claim a concurrent
 * enqueue committed while we waited for the key's lock); a stronger joined
 * transaction is refused with `workflow.active_key_unsupported_isolation`
 * before anything is written.
 */
import { z } from 'zod';
import { ensureReadCommitted, withStatement, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { ConflictError, InternalError, ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { positiveInt, requestKey } from '../validation/primitives.js';
import { WORKFLOW_INVALID_INPUT, validateWorkflowRun, type WorkflowRunInput } from './run-definition.js';
import { persistRuns } from './enqueue.js';
import { lockActiveKey } from '../coordination/locking.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import { runQuiescent } from '../db/fragments.js';

export type EnqueueActiveWorkflowInput = WorkflowRunInput & {
  /** Non-blank, at most 512 bytes of UTF-8; claimed in the run's scope (its organization, else global). */
  activeKey: string;
};

export type ActiveWorkflowOutcome =
  /** A new run, which holds the key now. */
  | { outcome: 'inserted'; workflowRunId: string; status: WorkflowRunStatus }
  /** Another run holds the key: its id and status; nothing was written. */
  | { outcome: 'existing_active'; workflowRunId: string; status: WorkflowRunStatus }
  /** The run this idempotency key created earlier (the same request); nothing was written. */
  | { outcome: 'existing_idempotent'; workflowRunId: string; status: WorkflowRunStatus };

const activeKeySchema = z.object({ activeKey: requestKey });

/** The scope a key is claimed in: the run's organization, else global. */
export function activeKeyScope(organizationId: string | null): string {
  return organizationId === null ? 'global' : `organization:${organizationId}`;
}

/**
 * Enqueues the run unless another run holds its active key. Joins your
 * transaction when `db` is one (the claim commits with your writes).
 *
 * @example
 * const outcome = await enqueueOrGetActiveWorkflowRun(prisma, {
 *   ...workflow('customer.sync').job('pull', 'crm.pull', { customerId }).build(),
 *   organizationId,
 *   activeKey: `sync:${customerId}`,
 * });
 * const run = workflowRunHandle(prisma, organizationScope(organizationId), outcome.workflowRunId);
 */
export async function enqueueOrGetActiveWorkflowRun(db: Db, input: EnqueueActiveWorkflowInput): Promise<ActiveWorkflowOutcome> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ValidationError(WORKFLOW_INVALID_INPUT, 'run', 'Expected a workflow run object.');
  }
  const { activeKey: rawKey, ...runInput } = input;
  const { activeKey } = parseInput(activeKeySchema, { activeKey: rawKey }, WORKFLOW_INVALID_INPUT);
  const run = validateWorkflowRun(runInput);
  const scope = activeKeyScope(run.organizationId);

  return withTransaction(db, 'enqueue or get active workflow', async (context) => {
    await ensureReadCommitted(context, 'workflow.active_key_unsupported_isolation', 'Workflow enqueue with an active key');
    const { tx } = context;
    await lockActiveKey(tx, scope, activeKey);

    if (run.idempotencyKey !== null) {
      const previous = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM runledger.workflow_runs
         WHERE workflow_type = ${run.workflowType} AND idempotency_key = ${run.idempotencyKey}
           AND organization_id::text IS NOT DISTINCT FROM ${run.organizationId}::text`;
      if (previous.length > 0) return idempotentOutcome(tx, await persistRuns(tx, [run], context.owned), scope, activeKey);
    }

    const holder = await freeActiveKeyTx(tx, scope, activeKey);
    if (holder) return { outcome: 'existing_active', workflowRunId: holder.workflowRunId, status: holder.status };

    const [result] = await persistRuns(tx, [run], context.owned);
    if (result!.disposition === 'existing') return idempotentOutcome(tx, [result!], scope, activeKey);
    await claimActiveKeyTx(tx, result!.workflowRunId, scope, activeKey);
    return { outcome: 'inserted', workflowRunId: result!.workflowRunId, status: result!.status };
  });
}

/**
 * Under the key's lock (rung 0): the run that holds the key and may not lose
 * it (not over, or a canceled job of it still quiescing), or null when the
 * key is free. A holder that is over and quiescent but not yet swept is
 * released here (its claim row locked, rung 5) rather than left for the
 * reaper. Enqueues and recoveries (src/recovery/) of a key both go through it.
 */
export async function freeActiveKeyTx(tx: Tx, scope: string, activeKey: string): Promise<{ workflowRunId: string; status: WorkflowRunStatus } | null> {
  const holders = await tx.$queryRaw<{ workflow_run_id: string; status: WorkflowRunStatus; quiescent: boolean }[]>`
    SELECT k.workflow_run_id, wr.status,
           ${runQuiescent('wr')} AS quiescent
      FROM runledger.workflow_active_keys k
      JOIN runledger.workflow_runs wr ON wr.id = k.workflow_run_id
     WHERE k.scope = ${scope} AND k.active_key = ${activeKey} AND k.released_at IS NULL
       FOR UPDATE OF k`;
  const holder = holders[0];
  if (!holder) return null;
  if (!holder.quiescent) return { workflowRunId: holder.workflow_run_id, status: holder.status };
  await tx.$executeRaw`
    UPDATE runledger.workflow_active_keys SET released_at = clock_timestamp()
     WHERE workflow_run_id = ${holder.workflow_run_id}::uuid AND released_at IS NULL`;
  return null;
}

/** Claims a free key (see freeActiveKeyTx) for a run this transaction just inserted. */
export async function claimActiveKeyTx(tx: Tx, workflowRunId: string, scope: string, activeKey: string): Promise<void> {
  const claimed = await tx.$executeRaw`
    INSERT INTO runledger.workflow_active_keys (workflow_run_id, scope, active_key)
    VALUES (${workflowRunId}::uuid, ${scope}, ${activeKey})
    ON CONFLICT DO NOTHING`;
  if (claimed !== 1) {
    // Unreachable while every claim goes through the key's lock.
    throw new InternalError('workflow.internal_state', 'The workflow run is in an inconsistent state.', {
      internalMessage: `active key claim for run ${workflowRunId} lost to a claim that bypassed the key lock`,
    });
  }
}

/**
 * The idempotency key named an existing run with the same request
 * (`persistRuns` threw otherwise): it is this request's run only if it was
 * enqueued with the same active key too.
 */
async function idempotentOutcome(
  tx: Tx,
  results: readonly { workflowRunId: string; status: WorkflowRunStatus; disposition: 'inserted' | 'existing' }[],
  scope: string,
  activeKey: string,
): Promise<ActiveWorkflowOutcome> {
  const result = results[0]!;
  if (result.disposition !== 'existing') {
    // The run with this idempotency key vanished between our two statements (deleted): let the caller retry.
    throw new ConflictError('workflow.idempotency_conflict', 'The idempotency key is being reused concurrently; retry.', {
      internalMessage: `active key enqueue: idempotent run disappeared, inserted ${result.workflowRunId} instead`,
    });
  }
  const claims = await tx.$queryRaw<{ scope: string; active_key: string }[]>`
    SELECT scope, active_key FROM runledger.workflow_active_keys WHERE workflow_run_id = ${result.workflowRunId}::uuid`;
  const claim = claims[0];
  if (!claim || claim.scope !== scope || claim.active_key !== activeKey) {
    throw new ConflictError('workflow.idempotency_conflict', 'The idempotency key was already used for a different workflow run request.', {
      details: { workflowRunId: result.workflowRunId },
      internalMessage: 'same run request, different (or no) active key',
      sensitiveDetails: { activeKey },
    });
  }
  return { outcome: 'existing_idempotent', workflowRunId: result.workflowRunId, status: result.status };
}

/**
 * Releases the claims of `workflowRunIds` that are over and quiescent (same
 * rule as the recompute's). Called by cancellation after it marks the run
 * CANCELED, holding the run row.
 */
export async function releaseActiveKeysOfRuns(tx: Tx, workflowRunIds: readonly string[]): Promise<number> {
  if (workflowRunIds.length === 0) return 0;
  return tx.$executeRaw`
    UPDATE runledger.workflow_active_keys k
       SET released_at = clock_timestamp()
      FROM runledger.workflow_runs wr
     WHERE k.workflow_run_id = ANY(${[...workflowRunIds]}::uuid[]) AND wr.id = k.workflow_run_id AND k.released_at IS NULL
       AND ${runQuiescent('wr')}`;
}

const sweepSchema = z.strictObject({ limit: positiveInt.max(10_000).default(500) });

/**
 * The reaper's sweep: releases up to `limit` claims whose runs are over and
 * whose canceled leases have all run out (oldest claims first). Claims a
 * concurrent transaction holds are skipped, never waited for. One statement,
 * autocommitted on a root client. Returns how many were released.
 */
export async function releaseQuiescedActiveKeys(db: Db, input: { limit?: number } = {}): Promise<number> {
  const { limit } = parseInput(sweepSchema, input, WORKFLOW_INVALID_INPUT);
  return withStatement(db, 'release quiesced active keys', (client) => releaseQuiescedActiveKeysTx(client, limit));
}

export async function releaseQuiescedActiveKeysTx(tx: Tx, limit: number): Promise<number> {
  return tx.$executeRaw`
    WITH releasable AS MATERIALIZED (
      SELECT k.workflow_run_id
        FROM runledger.workflow_active_keys k
        JOIN runledger.workflow_runs wr ON wr.id = k.workflow_run_id
       WHERE k.released_at IS NULL
         AND ${runQuiescent('wr')}
       ORDER BY k.claimed_at, k.workflow_run_id
       LIMIT ${limit}::int
         FOR UPDATE OF k SKIP LOCKED
    )
    UPDATE runledger.workflow_active_keys k
       SET released_at = clock_timestamp()
      FROM releasable r
     WHERE k.workflow_run_id = r.workflow_run_id`;
}
