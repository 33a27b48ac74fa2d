/**
 * Recovery of a durable function run as a fork (docs/concepts/durable-functions.md, "Recovery"):
 * the recovery run's `$function` body runs again, and the steps the source recorded (its FUNCTION
 * rows) are copied into the new run first, so the body replays them and runs only from the first
 * call the source did not finish. A failed step is never recorded (its error went into the body),
 * so "from the failed step on" is "every recorded step reused". `fromCallIndex` cuts earlier: only
 * the steps called before that index are reused.
 *
 * The source is terminal and quiescent when this runs (recover.ts checks both under the source
 * row's lock), so no attempt can record into it meanwhile: its FUNCTION rows are read unlocked.
 * The copies are new rows of a run nobody sees before this transaction commits.
 */
import type { Tx } from '../client/types.js';
import { ConflictError } from '../errors/runledger-error.js';
import { newId } from '../db/ids.js';
import type { ValidatedWorkflowRun } from '../workflow/run-definition.js';
import { FUNCTION_STEP_KEY } from '../model/constants.js';
import { RECOVERY_CARRIED } from '../workflow/enqueue.js';

/** A run `defineFunction(...).run(input)` built: one job step, `$function`, its result step. */
export function isFunctionRun(run: ValidatedWorkflowRun): boolean {
  return run.resultStepKey === FUNCTION_STEP_KEY && run.steps.length === 1 && run.steps[0]!.kind === 'job';
}

export function notAFunctionRun(sourceRunId: string): ConflictError {
  return new ConflictError('workflow.recovery_not_a_function', 'fromCallIndex applies to a durable function run only; this run is a DAG.', {
    details: { sourceRunId, field: 'fromCallIndex' },
  });
}

export interface ForkStep {
  sourceStepId: string;
  stepKey: string;
  callIndex: number;
}

/** The source's SUCCEEDED FUNCTION steps called before `before` (all when null), in call order. One read. */
export async function readForkSteps(tx: Tx, sourceRunId: string, before: number | null): Promise<ForkStep[]> {
  const rows = await tx.$queryRaw<{ id: string; step_key: string; call_index: number }[]>`
    SELECT id, step_key, call_index FROM runledger.workflow_steps
     WHERE workflow_run_id = ${sourceRunId}::uuid AND execution_kind = 'FUNCTION' AND status = 'SUCCEEDED'
       AND (${before}::int IS NULL OR call_index < ${before}::int)
     ORDER BY call_index`;
  return rows.map((row) => ({ sourceStepId: row.id, stepKey: row.step_key, callIndex: row.call_index }));
}

/**
 * Copies `steps` into the recovery run as carried FUNCTION rows (statusReason `workflow.recovery_carried`,
 * the key, call index and output of the source's row), one statement. Ids are issued here in call order,
 * after the run's `$function` step's, so the run's steps list in call order. Times are the recovery's: a
 * carried step finished, in this run, when it was carried (as a DAG recovery's carried steps do).
 */
export async function copyForkSteps(tx: Tx, recoveryRunId: string, steps: readonly ForkStep[]): Promise<void> {
  if (steps.length === 0) return;
  const ids = steps.map(() => newId());
  await tx.$executeRaw`
    INSERT INTO runledger.workflow_steps
           (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at, finished_at, output,
            call_index, status_reason, created_at, updated_at)
    SELECT c.id, ${recoveryRunId}::uuid, s.step_key, 'FUNCTION', s.organization_id, 'SUCCEEDED', now(), now(), s.output,
           s.call_index, ${RECOVERY_CARRIED}, now(), now()
      FROM unnest(${ids}::uuid[], ${steps.map((step) => step.sourceStepId)}::uuid[]) AS c(id, source_id)
      JOIN runledger.workflow_steps s ON s.id = c.source_id
     ORDER BY s.call_index`;
}
