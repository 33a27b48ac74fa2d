/**
 * Workflow recovery: run a finished workflow again as a NEW run, built from
 * what the source was enqueued with (rebuild.ts), linked to it in
 * `workflow_recoveries`. The source is never reopened or written.
 *
 * Modes:
 *   - `full`: every step runs again.
 *   - `failed_only`: steps that SUCCEEDED in the source, and whose
 *     prerequisites are all carried too, are inserted SUCCEEDED with the
 *     source's output and no job (statusReason `workflow.recovery_carried`);
 *     every other step runs again (FAILED, CANCELED, and anything downstream
 *     of those, even over an `on_terminal` edge, since its inputs may change).
 *     Carried edges count as settled from the start, so a step whose
 *     prerequisites are all carried is released at once (job steps get their
 *     job, external steps wait again), exactly as a root is at enqueue; the
 *     run starts RUNNING (or WAITING_FOR_EXTERNAL when only external steps
 *     are released). A source where every step would be carried is refused
 *     (`workflow.recovery_nothing_to_rerun`).
 *   - a durable function run (function-fork.ts): `full` runs the body from
 *     the start; `failed_only` forks it: the steps the source's body recorded
 *     are copied into the new run (carried), so its body replays them and
 *     runs from the first call the source did not finish; `fromCallIndex`
 *     reuses only the calls before it (and runs the body again even when the
 *     source succeeded).
 *
 * Idempotency: one recovery per (source, request key). The same request
 * (mode and reason, by fingerprint) again returns it (`existing`); a
 * different one is `workflow.recovery_request_conflict`. One recovery per
 * source: a source already recovered under another key is refused
 * (`workflow.recovery_already_recovered`, naming the latest recovery run)
 * unless the request says `again: true`. The check runs under the source
 * row's lock below, so two concurrent first recoveries make one.
 *
 * Active keys: a recovery of a keyed run takes the key. The source is over,
 * so its claim is released here if the sweep has not done so; another run
 * holding the key meanwhile refuses the recovery
 * (`workflow.recovery_active_key_held`).
 *
 * Order of checks and locks (locking.ts). Validation -> READ COMMITTED
 * (`workflow.recovery_unsupported_isolation`) -> the source visible in the
 * scope, with its active key if any (`workflow.run_not_found`; no lock) ->
 * the key's advisory lock (rung 0) -> the source run row FOR NO KEY UPDATE
 * (rung 4: serialises recoveries of one source, so five concurrent requests
 * with one key make one recovery; a purge skips the row) -> in a fresh
 * statement, the recorded recovery of this key, then any other recovery of
 * the source (refused unless `again`) -> the source terminal and
 * quiescent (no canceled job still inside its lease: a step run again must
 * not overlap its old handler) -> the snapshot, the appends, the rebuild and
 * its check against the rows -> the key's claim rows (rung 5) -> new rows
 * only (nobody waits on them): the run through the enqueue's own insert
 * (src/workflow/enqueue.ts, so every step setting it writes is written the
 * same way), the claim, the lineage row. A refusal writes nothing.
 */
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { scopeParams } from '../db/scope.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../model/json.js';
import { activeKeyScope, claimActiveKeyTx, freeActiveKeyTx } from '../workflow/active-keys.js';
import { WORKFLOW_INVALID_INPUT } from '../workflow/run-definition.js';
import { RECOVERY_CARRIED, persistRuns } from '../workflow/enqueue.js';
import { lockActiveKey } from '../coordination/locking.js';
import { isTerminalRunStatus, type WorkflowRunStatus } from '../model/workflow-rows.js';
import {
  activeKeyHeld,
  alreadyRecovered,
  nothingToRerun,
  requestConflict,
  runNotFound,
  snapshotMissing,
  sourceNotQuiesced,
  sourceNotTerminal,
} from './errors.js';
import { carriedSteps, rebuildRun, verifySourceRows } from './rebuild.js';
import { copyForkSteps, isFunctionRun, notAFunctionRun, readForkSteps } from './function-fork.js';
import { FUNCTION_STEP_KEY } from '../model/constants.js';
import { recoverWorkflowRunInputSchema, recoveryRequestHash, type ParsedRecoveryRequest, type RecoverWorkflowRunInput } from './inputs.js';
import { fromDbMode, toDbMode, type WorkflowRecoveryMode } from '../model/workflow-rows.js';
import { sqltag } from '@prisma/client/runtime/client';
import { inScope, quiescingJobs } from '../db/fragments.js';

export interface RecoverWorkflowRunResult {
  /** `inserted` by this call; `existing`: an earlier call with this request key and the same request made it. */
  outcome: 'inserted' | 'existing';
  sourceRunId: string;
  recoveryRunId: string;
  /** The recovery run's status now. */
  status: WorkflowRunStatus;
  mode: WorkflowRecoveryMode;
  /** Keys of the steps carried over as SUCCEEDED (failed_only; a function's reused steps too), sorted; empty for a full recovery. */
  carriedStepKeys: string[];
}

interface SourceRow {
  workflow_type: string;
  organization_id: string | null;
  status: WorkflowRunStatus;
  metadata: JsonValue;
  enqueue_request: JsonValue | null;
  result_step_key: string | null;
}

/**
 * Recovers a finished run as a new run (module comment). Joins your
 * transaction when `db` is one.
 *
 * @example
 * const recovery = await recoverWorkflowRun(prisma, {
 *   sourceRunId, scope: organizationScope(orgId), requestKey: `recover:${sourceRunId}:1`,
 *   reason: 'payment provider outage', mode: 'failed_only',
 * });
 * const handle = workflowRunHandle(prisma, organizationScope(orgId), recovery.recoveryRunId);
 */
export async function recoverWorkflowRun(db: Db, input: RecoverWorkflowRunInput): Promise<RecoverWorkflowRunResult> {
  const request = parseInput(recoverWorkflowRunInputSchema, input, WORKFLOW_INVALID_INPUT);
  const s = scopeParams(request.scope);
  const sourceRunId = request.sourceRunId;

  return withTransaction(db, 'recover workflow run', async (context) => {
    await ensureReadCommitted(context, 'workflow.recovery_unsupported_isolation', 'Workflow recovery');
    const { tx } = context;
    const [visible] = await tx.$queryRaw<{ scope: string | null; active_key: string | null }[]>`
      SELECT k.scope, k.active_key
        FROM runledger.workflow_runs wr
        LEFT JOIN runledger.workflow_active_keys k ON k.workflow_run_id = wr.id
       WHERE wr.id = ${sourceRunId}::uuid AND ${inScope(s, 'wr.organization_id')}`;
    if (!visible) throw runNotFound(sourceRunId);
    const activeKey = visible.active_key;
    if (activeKey !== null) await lockActiveKey(tx, visible.scope!, activeKey);

    const [source] = await tx.$queryRaw<SourceRow[]>`
      SELECT workflow_type, organization_id, status, metadata, enqueue_request, result_step_key
        FROM runledger.workflow_runs
       WHERE id = ${sourceRunId}::uuid
         FOR NO KEY UPDATE`;
    // Deleted (purged) while we waited for the row.
    if (!source) throw runNotFound(sourceRunId);

    const existing = await recordedRecovery(tx, request);
    if (existing) return existing;
    if (!request.again) {
      const [prior] = await tx.$queryRaw<{ recovery_run_id: string; recoveries: number }[]>`
        SELECT recovery_run_id, count(*) OVER ()::int AS recoveries
          FROM runledger.workflow_recoveries
         WHERE source_run_id = ${sourceRunId}::uuid
         ORDER BY created_at DESC, recovery_run_id DESC
         LIMIT 1`;
      if (prior) throw alreadyRecovered(sourceRunId, prior.recovery_run_id, prior.recoveries);
    }

    if (!isTerminalRunStatus(source.status)) throw sourceNotTerminal(sourceRunId, source.status);
    const [quiescing] = await tx.$queryRaw<{ until: Date | null }[]>`
      SELECT max(jq.lease_expires_at) AS until
        FROM ${quiescingJobs(sqltag`${sourceRunId}::uuid`)}`;
    if (quiescing?.until) throw sourceNotQuiesced(sourceRunId, quiescing.until);
    if (source.enqueue_request === null) throw snapshotMissing(sourceRunId);

    const appends = await tx.$queryRaw<{ request: JsonValue }[]>`
      SELECT request FROM runledger.workflow_mutations WHERE workflow_run_id = ${sourceRunId}::uuid ORDER BY created_at, mutation_key`;
    const run = rebuildRun({
      sourceRunId,
      workflowType: source.workflow_type,
      organizationId: source.organization_id,
      metadata: source.metadata,
      snapshot: source.enqueue_request,
      appends: appends.map((row) => row.request),
    });
    const states = await verifySourceRows(tx, sourceRunId, source.result_step_key, run);
    const isFunction = isFunctionRun(run);
    if (request.fromCallIndex !== undefined && !isFunction) throw notAFunctionRun(sourceRunId);
    const carried = request.mode === 'failed_only' ? carriedSteps(run, states) : new Map<string, JsonValue | null>();
    // A fork from a call index runs the body again even when the source succeeded.
    if (request.fromCallIndex !== undefined) carried.delete(FUNCTION_STEP_KEY);
    if (carried.size === run.steps.length) throw nothingToRerun(sourceRunId);
    // A function's failed-only recovery is a fork: its recorded steps are carried into the new run (function-fork.ts).
    const forked = isFunction && request.mode === 'failed_only' ? await readForkSteps(tx, sourceRunId, request.fromCallIndex ?? null) : [];

    const keyScope = activeKeyScope(source.organization_id);
    if (activeKey !== null) {
      const holder = await freeActiveKeyTx(tx, keyScope, activeKey);
      if (holder) throw activeKeyHeld(sourceRunId, holder.workflowRunId, holder.status);
    }
    const [inserted] = await persistRuns(tx, [run], context.owned, [carried]);
    const recoveryRunId = inserted!.workflowRunId;
    await copyForkSteps(tx, recoveryRunId, forked);
    if (activeKey !== null) await claimActiveKeyTx(tx, recoveryRunId, keyScope, activeKey);
    await tx.$executeRaw`
      INSERT INTO runledger.workflow_recoveries (source_run_id, request_key, recovery_run_id, request_hash, reason, mode)
      VALUES (${sourceRunId}::uuid, ${request.requestKey}, ${recoveryRunId}::uuid, ${recoveryRequestHash(request)}, ${request.reason},
              ${toDbMode(request.mode)}::runledger.workflow_recovery_mode)`;
    return {
      outcome: 'inserted',
      sourceRunId,
      recoveryRunId,
      status: inserted!.status,
      mode: request.mode,
      carriedStepKeys: [...carried.keys(), ...forked.map((step) => step.stepKey)].sort(),
    };
  });
}

/** The recovery recorded for this request key, as an `existing` result; a different request is a conflict. */
async function recordedRecovery(tx: Tx, request: ParsedRecoveryRequest): Promise<RecoverWorkflowRunResult | null> {
  const rows = await tx.$queryRaw<
    { recovery_run_id: string; request_hash: string; mode: 'FULL' | 'FAILED_ONLY'; status: WorkflowRunStatus; carried: string[] }[]
  >`
    SELECT r.recovery_run_id, r.request_hash, r.mode, wr.status,
           ARRAY(SELECT ws.step_key FROM runledger.workflow_steps ws
                  WHERE ws.workflow_run_id = r.recovery_run_id AND ws.status_reason = ${RECOVERY_CARRIED}
                  ORDER BY ws.step_key COLLATE "C") AS carried
      FROM runledger.workflow_recoveries r
      JOIN runledger.workflow_runs wr ON wr.id = r.recovery_run_id
     WHERE r.source_run_id = ${request.sourceRunId}::uuid AND r.request_key = ${request.requestKey}`;
  const row = rows[0];
  if (!row) return null;
  if (row.request_hash !== recoveryRequestHash(request)) throw requestConflict(request.sourceRunId, request.requestKey, row.recovery_run_id);
  return {
    outcome: 'existing',
    sourceRunId: request.sourceRunId,
    recoveryRunId: row.recovery_run_id,
    status: row.status,
    mode: fromDbMode(row.mode),
    carriedStepKeys: [...row.carried].sort(),
  };
}
