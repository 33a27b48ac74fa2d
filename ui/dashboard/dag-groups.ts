/**
 * The graph the DAG panel draws: steps in natural key order ("part-2" before
 * "part-10"), and every fan-out group (GROUP_MIN or more steps of one kind
 * and job type with exactly the same prerequisites and dependents, edge
 * modes included) folded into one node until the operator expands it. A
 * 1 -> 198 -> 1 run is three nodes; folding changes no edge's meaning, since
 * every member has the same edges as the group.
 */
export interface DagStep {
  stepKey: string;
  status: string;
  executionKind: string;
  jobType: string | null;
  stage: string | null;
  progress: unknown;
}
export interface DagEdge {
  prerequisiteStepKey: string;
  dependentStepKey: string;
  releaseMode: string;
}

export const GROUP_MIN = 6;

export interface DrawnGroup {
  id: string;
  members: DagStep[];
  /** Members per status, in the order STATUS_ORDER gives. */
  counts: [string, number][];
}

export interface DrawnGraph {
  /** Nodes in the order they are given to the layout: a step or a group. */
  nodes: ({ kind: 'step'; key: string; step: DagStep } | { kind: 'group'; key: string; group: DrawnGroup })[];
  edges: { from: string; to: string; releaseMode: string }[];
  /** The drawn node of every step: itself, or the group it is folded in. */
  nodeOf: Map<string, string>;
  /** Every group, folded or not (a group expanded is drawn as its members). */
  groups: Map<string, DrawnGroup>;
  /** The group each grouped step belongs to. */
  groupOf: Map<string, string>;
}

export const STATUS_ORDER = ['SUCCEEDED', 'RUNNING', 'ENQUEUED', 'WAITING_FOR_EXTERNAL', 'BLOCKED', 'FAILED', 'CANCELED'];

const collator = new Intl.Collator('en', { numeric: true });
export const byKey = (a: string, b: string): number => collator.compare(a, b);

export function statusCounts(steps: DagStep[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const step of steps) counts.set(step.status, (counts.get(step.status) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => STATUS_ORDER.indexOf(a[0]) - STATUS_ORDER.indexOf(b[0]));
}

/** The groups of `steps` (structure only: recomputed when the steps or edges change, not when a status does). */
export function findGroups(steps: DagStep[], edges: DagEdge[]): Map<string, string[]> {
  const ins = new Map<string, string[]>();
  const outs = new Map<string, string[]>();
  for (const edge of edges) {
    const mode = edge.releaseMode === 'ON_TERMINAL' ? '~' : '';
    (ins.get(edge.dependentStepKey) ?? ins.set(edge.dependentStepKey, []).get(edge.dependentStepKey)!).push(mode + edge.prerequisiteStepKey);
    (outs.get(edge.prerequisiteStepKey) ?? outs.set(edge.prerequisiteStepKey, []).get(edge.prerequisiteStepKey)!).push(mode + edge.dependentStepKey);
  }
  const bySignature = new Map<string, string[]>();
  for (const step of steps) {
    const signature = JSON.stringify([step.executionKind, step.jobType, (ins.get(step.stepKey) ?? []).sort(), (outs.get(step.stepKey) ?? []).sort()]);
    (bySignature.get(signature) ?? bySignature.set(signature, []).get(signature)!).push(step.stepKey);
  }
  const groups = new Map<string, string[]>();
  for (const members of bySignature.values()) {
    if (members.length < GROUP_MIN) continue;
    members.sort(byKey);
    groups.set(`group:${members[0]}`, members);
  }
  return groups;
}

export function drawnGraph(steps: DagStep[], edges: DagEdge[], groupKeys: Map<string, string[]>, expanded: ReadonlySet<string>): DrawnGraph {
  const stepByKey = new Map(steps.map((step) => [step.stepKey, step]));
  const groups = new Map<string, DrawnGroup>();
  const groupOf = new Map<string, string>();
  for (const [id, keys] of groupKeys) {
    const members = keys.map((key) => stepByKey.get(key)).filter((step): step is DagStep => step !== undefined);
    groups.set(id, { id, members, counts: statusCounts(members) });
    for (const key of keys) groupOf.set(key, id);
  }
  const nodeOf = new Map<string, string>();
  const nodes: DrawnGraph['nodes'] = [];
  for (const step of [...steps].sort((a, b) => byKey(a.stepKey, b.stepKey))) {
    const group = groupOf.get(step.stepKey);
    if (group !== undefined && !expanded.has(group)) {
      nodeOf.set(step.stepKey, group);
      if (groups.get(group)!.members[0] === step) nodes.push({ kind: 'group', key: group, group: groups.get(group)! });
    } else {
      nodeOf.set(step.stepKey, step.stepKey);
      nodes.push({ kind: 'step', key: step.stepKey, step });
    }
  }
  const seen = new Set<string>();
  const drawnEdges: DrawnGraph['edges'] = [];
  for (const edge of edges) {
    const from = nodeOf.get(edge.prerequisiteStepKey);
    const to = nodeOf.get(edge.dependentStepKey);
    if (from === undefined || to === undefined || from === to) continue;
    const id = `${from}\u0000${to}`;
    if (seen.has(id)) continue;
    seen.add(id);
    drawnEdges.push({ from, to, releaseMode: edge.releaseMode });
  }
  return { nodes, edges: drawnEdges, nodeOf, groups, groupOf };
}
