/**
 * Concurrency keys' limits, read and set (issue 35). A job names a key at enqueue (`concurrency`) or through
 * its definition; at most the key's limit of its jobs are LEASED at once, across every worker and process
 * (src/queue/statements/concurrency-slots.ts). The limit lives on the key's row, so an operator can change
 * it while jobs run: a higher limit admits more at the next claim; a lower one admits none until enough of
 * the leases holding the key end (no lease is taken back).
 */
import { z } from 'zod';
import type { Db, Tx } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { inScope } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { parseInput } from '../validation/parse.js';
import { concurrencyLimit, requestKey } from '../validation/primitives.js';
import { JOB_INVALID_INPUT, MAX_LIST_LIMIT } from './inputs.js';
import { setConcurrencyLimitStatement } from './statements/concurrency-limits.js';
import { NotFoundError } from '../errors/runledger-error.js';

export interface ConcurrencyLimit {
  key: string;
  /** At most this many of the key's jobs are LEASED at once. */
  limit: number;
  /** Live leases holding the key now (a canceled job's lease holds it until it runs out); in a tenant's scope, its own. */
  leased: number;
  /** PENDING jobs of the key that are due (waiting for a slot, or for the next claim), at most WAITING_COUNT_CAP. */
  waiting: number;
  /** 'enqueue': the last enqueue naming the key set the limit; 'operator': setConcurrencyLimit pinned it. */
  setBy: 'enqueue' | 'operator';
  updatedAt: Date;
}

/** Waiting jobs are counted up to this many per key (a deep backlog is not read whole). */
export const WAITING_COUNT_CAP = 10_000;

export const setConcurrencyLimitInputSchema = z.strictObject({ key: requestKey, limit: concurrencyLimit.nullable() });

/**
 * Pins `key`'s limit to `limit` (enqueues stop changing it), or with `limit: null` gives the limit back to
 * enqueues (the current value stays until the next enqueue naming the key). Takes effect at the next claim.
 * An operator's action: every organization's jobs of the key are bound by it.
 *
 * @example
 * await setConcurrencyLimit(prisma, { key: 'llm-provider', limit: 10 });
 */
export async function setConcurrencyLimit(db: Db, input: { key: string; limit: number | null }): Promise<ConcurrencyLimit> {
  const { key, limit } = parseInput(setConcurrencyLimitInputSchema, input, JOB_INVALID_INPUT);
  const write = (tx: Tx) => tx.$queryRaw<(LimitRow & { waiting: number })[]>(...asTemplate(setConcurrencyLimitStatement(key, limit, WAITING_COUNT_CAP)));
  // A row an enqueue created after the statement's snapshot is neither inserted nor changed by it: once more, on
  // a snapshot that sees it (the insert waited for that enqueue's commit).
  const [row] = await withStatement(db, 'set concurrency limit', async (tx) => {
    const first = await write(tx);
    return first.length > 0 || limit === null ? first : write(tx);
  });
  if (row === undefined) throw new NotFoundError('job.concurrency_key_not_found', 'No job has named this concurrency key.');
  return toLimit(row);
}

export const listConcurrencyLimitsInputSchema = z.strictObject({
  scope: scopeSchema,
  /** Keys after this one (the last key of the previous page). */
  after: requestKey.optional(),
  limit: z.number().int('must be an integer').min(1, 'must be at least 1').max(MAX_LIST_LIMIT).optional(),
});

/**
 * Concurrency keys in key order, with their limits, live leases and waiting jobs. In an organization's scope:
 * only keys its jobs hold or wait for, counting only its jobs (the limit itself is shared by every job of
 * the key); in the admin scope every key.
 *
 * @example
 * const { items, nextAfter } = await listConcurrencyLimits(prisma, { scope: adminScope() });
 */
export async function listConcurrencyLimits(
  db: Db,
  input: { scope: Scope; after?: string; limit?: number },
): Promise<{ items: ConcurrencyLimit[]; nextAfter: string | null }> {
  const { scope, after, limit = 100 } = parseInput(listConcurrencyLimitsInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(scope);
  return withStatement(
    db,
    'list concurrency limits',
    async (tx) => {
      const rows = await tx.$queryRaw<(LimitRow & { waiting: number })[]>`
        SELECT k.key, k.max_leased, k.set_by, k.updated_at,
               CASE WHEN ${s.all}::boolean THEN k.leased
                    ELSE (SELECT count(*)::int FROM runledger.job_leases l JOIN runledger.job_queue jq ON jq.id = l.job_id
                           WHERE l.concurrency_key = k.key AND ${inScope(s, 'jq.organization_id')}) END AS leased,
               (SELECT count(*)::int FROM (
                  SELECT 1 FROM runledger.job_queue jq
                   WHERE jq.claimable AND jq.concurrency_key = k.key AND jq.next_run_at <= now()
                     AND ${inScope(s, 'jq.organization_id')}
                   LIMIT ${WAITING_COUNT_CAP}::int) w) AS waiting
          FROM runledger.concurrency_slots k
         WHERE (${after ?? null}::text IS NULL OR k.key > ${after ?? null}::text)
           AND (${s.all}::boolean
                OR EXISTS (SELECT 1 FROM runledger.job_queue jq
                            WHERE jq.claimable AND jq.concurrency_key = k.key AND ${inScope(s, 'jq.organization_id')})
                OR EXISTS (SELECT 1 FROM runledger.job_leases l JOIN runledger.job_queue jq ON jq.id = l.job_id
                            WHERE l.concurrency_key = k.key AND ${inScope(s, 'jq.organization_id')}))
         ORDER BY k.key
         LIMIT ${limit + 1}::int`;
      const items = rows.slice(0, limit).map(toLimit);
      return { items, nextAfter: rows.length > limit ? (items.at(-1)?.key ?? null) : null };
    },
    { readCommitted: false },
  );
}

interface LimitRow {
  key: string;
  max_leased: number;
  leased: number;
  set_by: 'enqueue' | 'operator';
  updated_at: Date;
}

function toLimit(row: LimitRow & { waiting: number }): ConcurrencyLimit {
  return { key: row.key, limit: row.max_leased, leased: row.leased, waiting: row.waiting, setBy: row.set_by, updatedAt: row.updated_at };
}
