/**
 * What a workflow step's handler sees of its workflow: the run, its own key
 * and the outputs of its prerequisites (`ctx.prerequisites.get('crawl')`),
 * with each prerequisite's terminal status (an `afterTerminal` dependent may
 * run after a prerequisite FAILED or was CANCELED).
 *
 * Read by the claim statement itself (src/queue/claim.ts), never by a
 * statement of its own: a step is released only once all of its
 * prerequisites are terminal, and a terminal step's output never changes, so
 * what the claim reads is final, and a step costs no round trip more than a
 * direct job.
 */
import type { ClaimedJob } from './claimed-job.js';
import type { AnyJobDefinition, StepInputs, StepPrerequisite, StepPrerequisites } from './contract.js';
import { TerminalError } from './errors.js';

/** The step inputs of a claimed job, as its claim statement read them; undefined for a direct job. */
export function stepInputsOf(job: Pick<ClaimedJob, 'step'>): StepInputs | undefined {
  if (!job.step) return undefined;
  const prerequisites = job.step.prerequisites.map((p) =>
    Object.freeze({ key: p.key, status: p.status, releaseMode: p.releaseMode, jobType: p.jobType, output: p.status === 'SUCCEEDED' ? p.output : null }),
  );
  return { workflowRunId: job.step.workflowRunId, stepKey: job.step.stepKey, prerequisites: stepPrerequisites(prerequisites) };
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
