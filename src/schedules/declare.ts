/**
 * Schedules declared in code (next to the job definitions) and written at
 * worker start: `declareSchedules`, which `createWorker({ declareSchedules })`
 * calls in `start()`.
 *
 * Idempotent: declaring the same set again changes nothing a scheduler sees
 * (upsertSchedule keeps an unchanged schedule's cursor, so no slot is skipped
 * or repeated). Concurrent-safe: declarations take one advisory lock (rung 0
 * of src/coordination/locking.ts) before any schedule row, so four workers
 * starting together declare one after another, each an upsert of rows that
 * are already there.
 *
 * Schedules removed from the declaration: left as they are by default (they
 * keep running, and `runledger schedules pause` or `deleteSchedule` removes
 * them). With an `owner` tag the declared rows carry it (`declaredBy`), and
 * `prune: true` deletes the rows with that tag that this declaration no
 * longer lists; rows created by `upsertSchedule` (no tag) or by another
 * owner are never pruned. During a rolling deploy, old workers re-declare
 * what new ones pruned until the old ones are gone: the last declaration wins.
 */
import { z } from 'zod';
import type { Db } from '../client/types.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import { parseInput } from '../validation/parse.js';
import { storableText } from '../validation/primitives.js';
import { SCHEDULE_DECLARE_LOCK_NAMESPACE } from '../coordination/locking.js';
import { upsertSchedulesTx } from './crud.js';
import type { Schedule } from './rows.js';
import { MAX_SCHEDULE_BATCH, SCHEDULE_INVALID_INPUT, SCHEDULE_UNSUPPORTED_ISOLATION, upsertScheduleInputSchema } from './inputs.js';

/** Storable text like every stored string: a lone surrogate would be stored as U+FFFD, and prune would then never match it again. */
const ownerTag = storableText
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 200, 'must be at most 200 bytes (UTF-8)');

export const declareSchedulesInputSchema = z
  .strictObject({
    schedules: z.array(upsertScheduleInputSchema).max(MAX_SCHEDULE_BATCH),
    /** Tag written on every declared row; needed to prune. */
    owner: ownerTag.optional(),
    /** Delete rows tagged `owner` that `schedules` no longer lists. Default false. */
    prune: z.boolean().optional(),
  })
  .superRefine((input, ctx) => {
    if (input.prune && input.owner === undefined) ctx.addIssue({ code: 'custom', path: ['owner'], message: 'is required to prune' });
    const seen = new Set<string>();
    input.schedules.forEach((s, index) => {
      if (seen.has(s.key)) ctx.addIssue({ code: 'custom', path: ['schedules', index, 'key'], message: `declares "${s.key}" twice` });
      seen.add(s.key);
    });
  });
export type DeclareSchedulesInput = z.input<typeof declareSchedulesInputSchema>;

export interface DeclareSchedulesResult {
  /** The declared schedules as stored, in input order. */
  schedules: Schedule[];
  /** Keys of the owner's schedules deleted because the declaration no longer lists them (with `prune`). */
  pruned: string[];
}

/**
 * Upserts every declared schedule (one statement) and, with `prune`, deletes
 * the owner's schedules no longer declared (one more), in one transaction.
 *
 * @example
 * await declareSchedules(prisma, { owner: 'billing', prune: true, schedules: [
 *   defineSchedule({ key: 'invoices.nightly', cron: '0 3 * * *', job: buildInvoices, payload: {}, enabled: true }),
 * ] });
 */
export async function declareSchedules(db: Db, input: DeclareSchedulesInput): Promise<DeclareSchedulesResult> {
  const d = parseInput(declareSchedulesInputSchema, input, SCHEDULE_INVALID_INPUT);
  return withTransaction(db, 'declare schedules', async (context) => {
    await ensureReadCommitted(context, SCHEDULE_UNSUPPORTED_ISOLATION, 'Declaring schedules');
    const { tx } = context;
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${SCHEDULE_DECLARE_LOCK_NAMESPACE}::int, 0)`;
    const schedules = await upsertSchedulesTx(tx, d.schedules, d.owner ?? null);
    if (!d.prune) return { schedules, pruned: [] };
    const pruned = await tx.$queryRaw<{ schedule_key: string }[]>`
      DELETE FROM runledger.job_schedules
       WHERE declared_by = ${d.owner!} AND schedule_key <> ALL(${d.schedules.map((s) => s.key)}::text[])
      RETURNING schedule_key`;
    return { schedules, pruned: pruned.map((row) => row.schedule_key).sort() };
  });
}
