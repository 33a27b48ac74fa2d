/**
 * A function run's steps in call order. `listWorkflowSteps` pages by step id, issued when the body made
 * the call, so ids follow the calls except where a failed call ran again in a later attempt beside a
 * sibling recorded in the first: the CLI and the dashboard reorder with this before they draw.
 */
import type { WorkflowStepExecutionKind } from '../model/workflow-rows.js';

/**
 * `steps` with every other step where it was and the FUNCTION steps, in the places FUNCTION steps held,
 * sorted by call index (a function run's `$function` body step stays first).
 */
export function inCallOrder<T extends { executionKind: WorkflowStepExecutionKind; callIndex: number | null }>(steps: readonly T[]): T[] {
  const calls = steps.filter((step) => step.executionKind === 'FUNCTION').sort((a, b) => (a.callIndex ?? 0) - (b.callIndex ?? 0));
  if (calls.length === 0) return [...steps];
  let next = 0;
  return steps.map((step) => (step.executionKind === 'FUNCTION' ? calls[next++]! : step));
}
