/**
 * What a workflow step's handler sees of its workflow: the run, its own key
 * and the outputs of its prerequisites (`ctx.prerequisites.get('crawl')`),
 * with each prerequisite's terminal status (an `afterTerminal` dependent may
 * run after a prerequisite FAILED or was CANCELED).
 *
 * Read in ONE statement per batch of jobs, never one per prerequisite or per
 * job: `createStepInputLoader` gathers the ids of every workflow job a worker
 * starts in the same event-loop turn (a claim's batch is started in one) and
 * reads them all together. A step is released only once all of its
 * prerequisites are terminal, and a terminal step's output never changes, so
 * what is read is final.
 */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import type { JsonValue } from '../validation/primitives.js';
import type { AnyJobDefinition, JobOutput } from '../worker/define-job.js';
import { TerminalError } from '../worker/job-errors.js';
import type { WorkflowDependencyReleaseMode, WorkflowStepStatus } from './rows.js';

/** One prerequisite of the running step, as it ended. */
export interface StepPrerequisite<Output = JsonValue> {
  readonly key: string;
  /** SUCCEEDED for every `afterSuccess` prerequisite; FAILED or CANCELED possible for an `afterTerminal` one. */
  readonly status: Extract<WorkflowStepStatus, 'SUCCEEDED' | 'FAILED' | 'CANCELED'>;
  readonly releaseMode: WorkflowDependencyReleaseMode;
  /** null: an external step. */
  readonly jobType: string | null;
  /** Its output; null when it recorded none or did not succeed. */
  readonly output: Output | null;
}

/** The prerequisites of the running step, by key. Empty for a job that backs no step. */
export interface StepPrerequisites {
  readonly size: number;
  keys(): string[];
  /** Every prerequisite, in key order. */
  all(): StepPrerequisite[];
  /** The prerequisite `key`; undefined when the step has no such prerequisite. */
  get(key: string): StepPrerequisite | undefined;
  /**
   * The prerequisite `key`, its output typed by the definition that ran it.
   * Throws a TerminalError (`workflow.prerequisite_type_mismatch`: the job
   * dead-letters) when that step ran another job type, so a wrong definition
   * is caught instead of mistyping the output.
   */
  get<D extends AnyJobDefinition>(key: string, definition: D): StepPrerequisite<Exclude<JobOutput<D>, null>> | undefined;
}

/** The workflow side of a step's job (the handler context's workflow fields). */
export interface StepInputs {
  workflowRunId: string;
  stepKey: string;
  prerequisites: StepPrerequisites;
}

interface StepInputRow {
  job_id: string;
  workflow_run_id: string;
  step_key: string;
  prerequisite_key: string | null;
  prerequisite_status: StepPrerequisite['status'] | null;
  prerequisite_job_type: string | null;
  release_mode: WorkflowDependencyReleaseMode | null;
  output: JsonValue | null;
}

/** Reads the step inputs of `jobIds` (workflow-managed jobs) in one statement. Jobs backing no step are absent. */
export async function readStepInputs(db: Db, jobIds: readonly string[]): Promise<Map<string, StepInputs>> {
  if (jobIds.length === 0) return new Map();
  const rows = await withStatement(
    db,
    'read step inputs',
    async (client) => client.$queryRaw<StepInputRow[]>`
      SELECT jq.id AS job_id, ws.workflow_run_id, ws.step_key, p.step_key AS prerequisite_key,
             p.status AS prerequisite_status, p.job_type AS prerequisite_job_type, d.release_mode, p.output
        FROM runledger.job_queue jq
        JOIN runledger.workflow_steps ws ON ws.id = jq.workflow_step_id
        LEFT JOIN runledger.workflow_step_dependencies d ON d.dependent_step_id = ws.id
        LEFT JOIN runledger.workflow_steps p ON p.id = d.prerequisite_step_id
       WHERE jq.id = ANY(${[...jobIds]}::uuid[])
       ORDER BY jq.id, p.step_key`,
    // Terminal prerequisites do not change: any snapshot reads the same.
    { readCommitted: false },
  );
  const grouped = new Map<string, { workflowRunId: string; stepKey: string; prerequisites: StepPrerequisite[] }>();
  for (const row of rows) {
    const id = row.job_id.toLowerCase();
    let entry = grouped.get(id);
    if (!entry) grouped.set(id, (entry = { workflowRunId: row.workflow_run_id, stepKey: row.step_key, prerequisites: [] }));
    if (row.prerequisite_key !== null) {
      entry.prerequisites.push(
        Object.freeze({
          key: row.prerequisite_key,
          status: row.prerequisite_status!,
          releaseMode: row.release_mode!,
          jobType: row.prerequisite_job_type,
          output: row.prerequisite_status === 'SUCCEEDED' ? row.output : null,
        }),
      );
    }
  }
  const result = new Map<string, StepInputs>();
  for (const [id, entry] of grouped) {
    result.set(id, { workflowRunId: entry.workflowRunId, stepKey: entry.stepKey, prerequisites: stepPrerequisites(entry.prerequisites) });
  }
  return result;
}

export const NO_PREREQUISITES: StepPrerequisites = stepPrerequisites([]);

function stepPrerequisites(list: readonly StepPrerequisite[]): StepPrerequisites {
  const byKey = new Map(list.map((p) => [p.key, p]));
  return Object.freeze({
    size: list.length,
    keys: () => [...byKey.keys()],
    all: () => [...list],
    get(key: string, definition?: AnyJobDefinition) {
      const found = byKey.get(key);
      if (found && definition && found.jobType !== definition.jobType) {
        // A bug in the handler, not a passing fault: dead-lettered at once rather than retried.
        throw new TerminalError(`Prerequisite "${key}" ran job type ${String(found.jobType)}, not ${definition.jobType}.`, {
          code: 'workflow.prerequisite_type_mismatch',
        });
      }
      return found;
    },
  } as StepPrerequisites);
}

/**
 * Batches `load(jobId)` calls made in the same event-loop turn into one
 * `readStepInputs` statement. A failed read rejects every load of its batch;
 * the worker retries a transient failure (an outage) until the job's lease
 * expires, and records anything else as a retryable failure of the attempt
 * (`job.step_inputs_unavailable`) without running the handler.
 */
export function createStepInputLoader(db: Db): (jobId: string) => Promise<StepInputs | undefined> {
  let pending: { ids: string[]; done: Promise<Map<string, StepInputs>> } | undefined;
  return (jobId) => {
    if (!pending) {
      const batch: { ids: string[]; done?: Promise<Map<string, StepInputs>> } = { ids: [] };
      batch.done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        pending = undefined;
        return readStepInputs(db, batch.ids);
      });
      pending = batch as { ids: string[]; done: Promise<Map<string, StepInputs>> };
    }
    pending.ids.push(jobId);
    return pending.done.then((inputs) => inputs.get(jobId.toLowerCase()));
  };
}
