/**
 * Sending a signal to a durable function run (docs/concepts/durable-functions.md, "Signals"): `signal(db,
 * runId, name, payload)`, with a root client or inside the host's transaction (the signal commits with the
 * host's writes, or not at all).
 *
 * Two statements in one transaction, so the second reads with a snapshot taken once the lock is held:
 *   1. the run (in the caller's scope) and its body's `$function` job row, locked FOR UPDATE (rung 1 of
 *      src/coordination/locking.ts). Every wait of the run opens or times out under that same row lock
 *      (function-wait-statements.ts), so a send and a wait of one run never interleave: a signal finds the
 *      wait already open, or the wait finds the signal in the mailbox.
 *   2. the idempotency key's earlier send, if any (then nothing is written); else the run's earliest open
 *      wait of this name (its FUNCTION step row, FOR UPDATE: rung 2), the signal row (consumed by that wait,
 *      or left in the mailbox), the wait's outcome, and the body's wake (src/coordination/function-wake.ts).
 */
import { z } from 'zod';
import { sqltag } from '@prisma/client/runtime/client';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { newId } from '../db/ids.js';
import { inScope } from '../db/fragments.js';
import { noOrganizationScope, scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { ConflictError, NotFoundError } from '../errors/runledger-error.js';
import { WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
import type { JsonValue } from '../model/json.js';
import { parseInput } from '../validation/parse.js';
import { jsonValue, requestKey, uuid } from '../validation/primitives.js';
import { wakeFunctionJobs } from '../coordination/function-wake.js';
import { FUNCTION_STEP_KEY } from '../model/constants.js';
import { signalNameSchema, signalWaitKey } from './function-context.js';

export const SIGNAL_INVALID = 'workflow.invalid_signal';

/** Options of `signal`. */
export interface SignalOptions {
  /**
   * Whose run this may be: `organizationScope(orgId)` for a tenant's run, `adminScope()` for any. Default
   * `noOrganizationScope()`: only runs started without an organization.
   */
  scope?: Scope;
  /** A retried send with the same key (for this run) is not delivered twice: it returns the first send. */
  idempotencyKey?: string;
}

/** What `signal` did. */
export interface SignalReceipt {
  signalId: string;
  /** true: a wait of the run was open and took it now (the function was woken); false: kept in the mailbox. */
  delivered: boolean;
  /** true: an earlier send with the same idempotency key is returned; nothing was written. */
  duplicate: boolean;
}

const signalSchema = z.strictObject({
  workflowRunId: uuid,
  name: signalNameSchema,
  payload: jsonValue,
  options: z.strictObject({ scope: scopeSchema.optional(), idempotencyKey: requestKey.optional() }),
});

/**
 * Sends the signal `name` with `payload` (JSON) to the durable function run `workflowRunId`. A wait of that
 * name open now takes it and the function is woken at once; otherwise it is kept until the function's next
 * `ctx.waitForSignal(name)`, each wait taking one, oldest first. Refuses an unknown run or one outside the
 * scope (`workflow.run_not_found`), a run that is not a durable function (`workflow.signal_not_function`), a
 * finished or canceled one (`workflow.run_already_finished`), a reused idempotency key with another name or
 * payload (`workflow.signal_idempotency_conflict`) and bad input (`workflow.invalid_signal`, naming the field),
 * writing nothing.
 *
 * @example
 * await prisma.$transaction(async (tx) => {
 *   await tx.order.update({ where: { id }, data: { approved: true } });
 *   await signal(tx, runId, 'approval', { by: 'ana' }, { idempotencyKey: `approval:${id}` });
 * });
 */
export async function signal(db: Db, workflowRunId: string, name: string, payload?: JsonValue, options: SignalOptions = {}): Promise<SignalReceipt> {
  const parsed = parseInput(signalSchema, { workflowRunId, name, payload: payload === undefined ? null : payload, options: options ?? {} }, SIGNAL_INVALID);
  const scope = scopeParams(parsed.options.scope ?? noOrganizationScope());
  const runId = parsed.workflowRunId;
  const key = parsed.options.idempotencyKey ?? null;
  // An omitted or null payload is JSON null: the mailbox column holds a JSON value, never SQL NULL.
  const body = JSON.stringify(parsed.payload ?? null);
  const signalId = newId();

  return withTransaction(db, 'signal function run', async (context) => {
    await ensureReadCommitted(context, 'workflow.signal_unsupported_isolation', 'Signalling a function run');
    const { tx } = context;
    const [target] = await tx.$queryRaw<{ job_id: string | null; job_status: string | null }[]>`
      WITH run AS (
        SELECT r.id FROM runledger.workflow_runs r WHERE r.id = ${runId}::uuid AND ${inScope(scope, 'r.organization_id')}
      ),
      body AS (
        SELECT ws.job_id FROM runledger.workflow_steps ws JOIN run ON ws.workflow_run_id = run.id
         WHERE ws.step_key = ${FUNCTION_STEP_KEY} AND ws.execution_kind = 'JOB'
      ),
      locked AS MATERIALIZED (
        SELECT jq.id, jq.status::text AS status FROM runledger.job_queue jq
         WHERE jq.id = (SELECT job_id FROM body)
           FOR UPDATE
      )
      SELECT (SELECT job_id FROM body) AS job_id, (SELECT status FROM locked) AS job_status FROM run`;
    if (!target) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId: runId } });
    if (!target.job_id) {
      throw new ConflictError('workflow.signal_not_function', 'The workflow run is not a durable function run: only those take signals.', {
        details: { workflowRunId: runId },
      });
    }
    if (target.job_status !== 'PENDING' && target.job_status !== 'LEASED') {
      throw new ConflictError('workflow.run_already_finished', 'The function run has finished or was canceled: it takes no more signals.', {
        details: { workflowRunId: runId, bodyStatus: target.job_status },
      });
    }
    const rows = await tx.$queryRaw<{ prior_id: string | null; prior_same: boolean | null; prior_delivered: boolean | null; delivered: boolean }[]>(
      ...asTemplate(sqltag`
      WITH prior AS (
        SELECT s.id, s.name = ${parsed.name} AND s.payload = ${body}::jsonb AS same, s.consumed_by_step_id IS NOT NULL AS delivered
          FROM runledger.workflow_signals s
         WHERE s.workflow_run_id = ${runId}::uuid AND s.idempotency_key = ${key}::text
      ),
      clock AS MATERIALIZED (SELECT clock_timestamp() AS at),
      wait AS MATERIALIZED (
        SELECT ws.id FROM runledger.workflow_steps ws
         WHERE ws.workflow_run_id = ${runId}::uuid AND ws.execution_kind = 'FUNCTION'
           AND split_part(ws.step_key, '#', 1) = ${signalWaitKey(parsed.name)} AND ws.output->'outcome' IS NULL
           AND NOT EXISTS (SELECT 1 FROM prior)
         ORDER BY ws.call_index
         LIMIT 1
           FOR UPDATE
      ),
      inserted AS (
        INSERT INTO runledger.workflow_signals
               (id, workflow_run_id, organization_id, name, payload, idempotency_key, created_at, consumed_by_step_id, consumed_at)
        SELECT ${signalId}::uuid, r.id, r.organization_id, ${parsed.name}, ${body}::jsonb, ${key}::text, c.at, w.id, CASE WHEN w.id IS NULL THEN NULL ELSE c.at END
          FROM runledger.workflow_runs r CROSS JOIN clock c LEFT JOIN wait w ON true
         WHERE r.id = ${runId}::uuid AND NOT EXISTS (SELECT 1 FROM prior)
        RETURNING id
      ),
      resolved AS (
        UPDATE runledger.workflow_steps ws
           SET output = ws.output || jsonb_build_object('outcome', 'received', 'payload', ${body}::jsonb, 'signalId', ${signalId}::text),
               finished_at = c.at, updated_at = c.at
          FROM wait w, clock c
         WHERE ws.id = w.id AND EXISTS (SELECT 1 FROM inserted)
        RETURNING ws.id
      ),
      ${wakeFunctionJobs(sqltag`SELECT ${target.job_id}::uuid FROM resolved`, sqltag`(SELECT at FROM clock)`)},
      notified AS (SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, ${runId}::text)) AS n FROM resolved)
      SELECT (SELECT id FROM prior) AS prior_id, (SELECT same FROM prior) AS prior_same, (SELECT delivered FROM prior) AS prior_delivered,
             EXISTS (SELECT 1 FROM resolved) AS delivered
        FROM notified, woken_notified`),
    );
    const row = rows[0]!;
    if (row.prior_id !== null) {
      if (!row.prior_same) {
        throw new ConflictError('workflow.signal_idempotency_conflict', 'This idempotency key was used for another signal of this run.', {
          details: { workflowRunId: runId, idempotencyKey: key, signalId: row.prior_id },
        });
      }
      return { signalId: row.prior_id, delivered: row.prior_delivered === true, duplicate: true };
    }
    return { signalId, delivered: row.delivered, duplicate: false };
  });
}
