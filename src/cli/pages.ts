/** The CLI shows whole runs and job histories: it follows `nextCursor` until the last page. */
import type { Page } from '../queue/inputs.js';

/** Every item of a paged list, fetched 500 at a time (the largest page). */
export async function allItems<T>(fetchPage: (paging: { limit: number; cursor?: string }) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await fetchPage({ limit: 500, ...(cursor === undefined ? {} : { cursor }) });
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return items;
}
