/**
 * A run's critical path: the chain of dependent steps, through the DAG's
 * edges, that set how long the run took, by the steps' actual times. A step
 * is released when its last prerequisite ends, so walking back from the step
 * that ended last, each time through the prerequisite that ended last, gives
 * a chain with no slack in it: no other chain of dependent steps spans as
 * long. The walk stops at a root, or at a step that was created after its
 * prerequisites had all ended (a step appended to a running run waited for
 * the append, not for them).
 *
 * Unfinished steps count with "now" as their end once released (running,
 * queued or waiting for an external completion); a step still blocked on
 * its prerequisites has not begun and is on no path yet. Plain data in and
 * out, no DOM: the unit tests run it under Node.
 */

export interface PathStep {
  stepKey: string;
  createdAt: string;
  releasedAt: string | null;
  finishedAt: string | null;
}

export interface PathEdge {
  prerequisiteStepKey: string;
  dependentStepKey: string;
}

export interface CriticalPath {
  /** Step keys from the first step of the chain to the one that ended last. */
  keys: string[];
  /** When the chain began (its first step's creation) and ended, in epoch ms. */
  from: number;
  to: number;
}

const at = (value: string | null): number | null => (value === null ? null : new Date(value).getTime());

const collator = new Intl.Collator('en', { numeric: true });

export function criticalPath(steps: PathStep[], edges: PathEdge[], now: number): CriticalPath | null {
  const byKey = new Map(steps.map((step) => [step.stepKey, step]));
  const end = (step: PathStep): number | null => at(step.finishedAt) ?? (step.releasedAt === null ? null : now);
  const prerequisites = new Map<string, string[]>();
  for (const edge of edges) {
    (prerequisites.get(edge.dependentStepKey) ?? prerequisites.set(edge.dependentStepKey, []).get(edge.dependentStepKey)!).push(edge.prerequisiteStepKey);
  }
  // The later end wins; on a tie, the first key in natural order, so the answer does not depend on input order.
  const latest = (candidates: PathStep[]): PathStep | undefined => {
    let best: PathStep | undefined;
    let bestEnd = -Infinity;
    for (const step of candidates) {
      const e = end(step);
      if (e === null) continue;
      if (e > bestEnd || (e === bestEnd && best !== undefined && collator.compare(step.stepKey, best.stepKey) < 0)) {
        best = step;
        bestEnd = e;
      }
    }
    return best;
  };
  const last = latest(steps);
  if (last === undefined) return null;
  const keys = [last.stepKey];
  const seen = new Set(keys);
  let current = last;
  for (;;) {
    const before = latest((prerequisites.get(current.stepKey) ?? []).map((key) => byKey.get(key)).filter((step): step is PathStep => step !== undefined));
    if (before === undefined || seen.has(before.stepKey)) break;
    if (end(before)! <= at(current.createdAt)!) break;
    keys.push(before.stepKey);
    seen.add(before.stepKey);
    current = before;
  }
  keys.reverse();
  return { keys, from: at(byKey.get(keys[0]!)!.createdAt)!, to: end(last)! };
}
