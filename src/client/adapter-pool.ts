/**
 * The pg Pool under a Prisma client built on `new PrismaPg(pool)` (@prisma/adapter-pg), so that a worker given
 * the host's Prisma client can send its own statements through `poolDb(pool)`, without Prisma's query layer
 * (about a third of the worker's Node CPU per job: bench/README.md, "createWorker on a pg Pool").
 *
 * Prisma promises no way to reach it: this reads two fields of Prisma 7's own objects, the client's
 * `_engineConfig.adapter` (the adapter factory given to `new PrismaClient({ adapter })`) and the PrismaPg
 * factory's `externalPool` (set when it was built on a Pool, not on a config or a URL). Whatever is missing,
 * renamed or not a pg Pool answers undefined and the worker stays on the Prisma client: a Prisma upgrade can
 * cost speed here, never correctness. Named statements only when the adapter names its own
 * (`statementNameGenerator`): an adapter that does not may be behind a pooler that cannot hold them.
 */
import type pg from 'pg';
import { isPgPool } from './types.js';

export interface AdapterPool {
  pool: pg.Pool;
  /** The adapter names its statements: poolDb may too. */
  preparedStatements: boolean;
}

const PG_ADAPTER_NAME = '@prisma/adapter-pg';

export function prismaAdapterPool(client: unknown): AdapterPool | undefined {
  try {
    const config = (client as { _engineConfig?: unknown } | null)?._engineConfig as { adapter?: unknown } | undefined;
    const factory = config?.adapter as { adapterName?: unknown; externalPool?: unknown; options?: { statementNameGenerator?: unknown } } | undefined;
    if (factory?.adapterName !== PG_ADAPTER_NAME || !isPgPool(factory.externalPool)) return undefined;
    const pool = factory.externalPool;
    // An ended pool (the host disconnected) is the Prisma client's to report, as it always was.
    if ((pool as { ending?: unknown; ended?: unknown }).ending === true || (pool as { ended?: unknown }).ended === true) return undefined;
    return { pool, preparedStatements: typeof factory.options?.statementNameGenerator === 'function' };
  } catch {
    return undefined; // a getter that throws, a proxy that refuses: not a client we can see into
  }
}
