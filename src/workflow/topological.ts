/**
 * Kahn's algorithm over steps named by key, stable in input order: the order
 * in which every step comes after its prerequisites, or, when there is none,
 * one cycle (as step indexes, each a prerequisite of the next). Shared by run
 * validation and appends, which differ only in which prerequisites count and
 * how they name the cycle in the error.
 */
export type TopologicalResult = { order: number[]; cycle?: undefined } | { order?: undefined; cycle: number[] };

export function topologicalOrder(keys: readonly string[], prerequisitesOf: (index: number) => readonly string[]): TopologicalResult {
  const indexByKey = new Map(keys.map((key, index) => [key, index]));
  const prerequisites = keys.map((_, index) => prerequisitesOf(index).map((key) => indexByKey.get(key)!));
  const remaining = prerequisites.map((list) => list.length);
  const dependents: number[][] = keys.map(() => []);
  for (const [index, list] of prerequisites.entries()) for (const p of list) dependents[p]!.push(index);
  const ready = keys.flatMap((_, index) => (remaining[index] === 0 ? [index] : []));
  const order: number[] = [];
  for (let head = 0; head < ready.length; head += 1) {
    const index = ready[head]!;
    order.push(index);
    for (const dependent of dependents[index]!) {
      remaining[dependent]! -= 1;
      if (remaining[dependent] === 0) ready.push(dependent);
    }
  }
  if (order.length === keys.length) return { order };

  // Walk prerequisites from an unordered step until a step repeats: that is a cycle.
  const placed = new Set(order);
  let current = keys.findIndex((_, index) => !placed.has(index));
  const path: number[] = [];
  const onPath = new Map<number, number>();
  while (!onPath.has(current)) {
    onPath.set(current, path.length);
    path.push(current);
    current = prerequisites[current]!.find((p) => !placed.has(p))!;
  }
  return { cycle: path.slice(onPath.get(current)!).reverse() };
}
