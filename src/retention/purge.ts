/**
 * Retention: `purgeFinished` deletes finished direct jobs and finished
 * workflow runs (with their steps, edges, jobs and the jobs' events) that
 * finished before a cutoff, in bounded batches, each batch its own short
 * transaction on a root client (joined to the caller's on a transaction
 * client, where the locks then last until the caller commits).
 *
 * What is kept:
 *   - a job or run that has not finished, or finished at or after the cutoff;
 *   - a CANCELED job still inside the lease it was canceled in (its handler
 *     may still be running: cancellation keeps the expiry as a quiescence
 *     marker), and a run with such a job;
 *   - workflow jobs, except with their run (never a step's job alone);
 *   - replay lineage whole. Jobs joined by `job_replays` rows (a source and
 *     its replays, transitively, in either direction) form one lineage; a
 *     lineage is deleted in one batch when every one of its jobs is purgeable
 *     (finished before the cutoff, in `statuses`, not quiescing), and kept
 *     whole otherwise. So a source is kept while any replay of it is kept,
 *     and a replay never outlives its recorded source.
 *   - pending enqueue intents (settled ones, PROMOTED or CONFLICT, are
 *     deleted with the job they name);
 *   - finished-job counters (job_counts) of the last FINISHED_COUNTS_KEPT_MS
 *     or after the cutoff (older ones are deleted, outside any batch);
 *   - recovery lineage whole, the same way: runs joined by
 *     `workflow_recoveries` rows (a source, its recoveries, theirs) are
 *     deleted in one batch when every one of them is purgeable, with the
 *     lineage rows, and otherwise all stay.
 *
 * Batches. Candidates are read after a cursor that moves past every
 * candidate, kept or not, so a pass ends even when old rows must stay. A row
 * another transaction holds is skipped (it is caught by a later purge). Jobs
 * are read in id order by the primary key (ids are time-ordered, UUIDv7, and
 * no index of job_queue names finished_at: migration 20261229000001), from
 * the oldest up to the smallest id made ID_CLOCK_MARGIN_MS after the cutoff:
 * a job created after that cannot have finished before the cutoff. Runs are
 * read in (finished_at, id) order from workflow_runs_finished_idx.
 *
 * Locks. Every lock is taken with SKIP LOCKED, in the workflow protocol's
 * class order (job rows, then step rows, then run rows; src/workflow/
 * locking.ts), and the deletes then touch only rows this transaction holds
 * (plus lineage and edge rows, which nothing else locks, and the events of
 * the deleted jobs). Purge never waits for a lock, so it can be in no
 * deadlock cycle and never holds up a worker. A lineage is re-read after its
 * jobs are locked: a replay recorded in between (its insert needed a lock
 * on a job we now hold) would show up there, and the lineage is then kept.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import type { Db, Tx } from '../client/types.js';
import { asTemplate } from '../db/sql-template.js';
import { withTransaction } from '../client/transaction.js';
import { parseInput } from '../validation/parse.js';
import {
  DEFAULT_PURGE_BATCH,
  PURGEABLE_JOB_STATUSES,
  PURGEABLE_RUN_STATUSES,
  RETENTION_INVALID_INPUT,
  purgeFinishedInputSchema,
  type PurgeFinishedInput,
} from './inputs.js';
import { TERMINAL_RUN } from '../db/fragments.js';
import { deleteJobsStatement } from '../queue/statements/delete-jobs.js';
import { ID_CLOCK_MARGIN_MS, uuidv7Floor } from '../db/ids.js';
import { pruneFinishedCountsStatement } from '../queue/finished-counts.js';

export interface PurgeFinishedResult {
  /** Direct jobs deleted (or, with dryRun, that would be). */
  jobs: number;
  /** Workflow runs deleted (or that would be). */
  workflowRuns: number;
  /** Jobs of those runs (their steps' jobs), deleted with them. */
  workflowJobs: number;
  /** Transactions used. */
  batches: number;
  dryRun: boolean;
}

interface Cursor {
  /**
   * The last candidate's finish time as PostgreSQL wrote it (text, microseconds). Not a JS Date: its
   * milliseconds would put the cursor before rows of the same millisecond, which a batch statement finishes
   * together, and a batch of kept rows (or a dry run) would then be read again for ever.
   */
  finishedAt: string;
  id: string;
}

interface Settings {
  cutoff: Date;
  jobStatuses: string[];
  runStatuses: string[];
  batchSize: number;
  dryRun: boolean;
  /** Dry run only: jobs already counted (a lineage reached from candidates of two batches counts once). */
  counted: Set<string>;
}

/**
 * Deletes finished direct jobs and workflow runs older than `olderThan` (see
 * the module comment for what is kept and why).
 *
 * @example
 * const thirtyDaysAgo = new Date(Date.now() - 30 * 24 * 3600 * 1000);
 * const { jobs, workflowRuns } = await purgeFinished(prisma, { olderThan: thirtyDaysAgo, batchSize: 500 });
 */
export async function purgeFinished(db: Db, input: PurgeFinishedInput): Promise<PurgeFinishedResult> {
  const parsed = parseInput(purgeFinishedInputSchema, input, RETENTION_INVALID_INPUT);
  const settings: Settings = {
    cutoff: parsed.olderThan,
    jobStatuses: [...new Set(parsed.statuses ?? PURGEABLE_JOB_STATUSES)],
    runStatuses: [...new Set(parsed.workflowRunStatuses ?? PURGEABLE_RUN_STATUSES)],
    batchSize: parsed.batchSize ?? DEFAULT_PURGE_BATCH,
    dryRun: parsed.dryRun ?? false,
    counted: new Set(),
  };
  const result: PurgeFinishedResult = { jobs: 0, workflowRuns: 0, workflowJobs: 0, batches: 0, dryRun: settings.dryRun };
  let cursor: Cursor | null = null;
  for (;;) {
    const batch: JobBatch = await withTransaction(db, 'purge finished jobs', ({ tx }) => purgeJobBatch(tx, settings, cursor));
    result.batches += 1;
    result.jobs += batch.deleted;
    if (batch.next === null) break;
    cursor = batch.next;
  }
  cursor = null;
  for (;;) {
    const batch: RunBatch = await withTransaction(db, 'purge finished workflow runs', ({ tx }) => purgeRunBatch(tx, settings, cursor));
    result.batches += 1;
    result.workflowRuns += batch.runs;
    result.workflowJobs += batch.jobs;
    if (batch.next === null) break;
    cursor = batch.next;
  }
  // The finished-job counters of minutes no reader looks at any more (and before the cutoff), in one statement.
  if (!settings.dryRun)
    await withTransaction(db, 'purge finished counters', async ({ tx }) => tx.$executeRaw(...asTemplate(pruneFinishedCountsStatement(settings.cutoff))));
  return result;
}

interface JobBatch {
  deleted: number;
  /** Where the next batch starts; null when this one was the last. */
  next: Cursor | null;
}

async function purgeJobBatch(tx: Tx, s: Settings, cursor: Cursor | null): Promise<JobBatch> {
  // 1. Candidates (after the cursor) and the lineage of each, walked both ways through job_replays.
  const walked = await walkCandidates(tx, JOB_LINEAGE, s, cursor);
  if (walked.length === 0) return { deleted: 0, next: null };
  const { lineages, next } = lineagesOfBatch(walked, s.batchSize);

  // 2. Lock every job of every lineage (SKIP LOCKED), reading whether each is purgeable.
  const allIds = [...new Set(walked.map((w) => w.id))];
  const locked = await tx.$queryRaw<{ id: string; purgeable: boolean }[]>`
    SELECT id,
           (workflow_step_id IS NULL
            AND status::text = ANY(${s.jobStatuses}::text[])
            AND finished_at < ${s.cutoff}::timestamptz
            AND NOT (status = 'CANCELED' AND lease_expires_at IS NOT NULL AND lease_expires_at > now())) AS purgeable
      FROM runledger.job_queue
     WHERE id = ANY(${allIds}::uuid[])
     ORDER BY id
       FOR UPDATE SKIP LOCKED`;
  const purgeable = new Set(locked.filter((row) => row.purgeable).map((row) => row.id));
  const whole = [...lineages.values()].filter((members) => [...members].every((id) => purgeable.has(id)));
  if (whole.length === 0) return { deleted: 0, next };

  // 3. Re-read the lineages of the jobs now held: one that grew meanwhile is kept whole.
  const heldIds = [...new Set(whole.flatMap((members) => [...members]))];
  const links = await tx.$queryRaw<{ source_job_id: string; replay_job_id: string }[]>`
    SELECT source_job_id, replay_job_id FROM runledger.job_replays
     WHERE source_job_id = ANY(${heldIds}::uuid[]) OR replay_job_id = ANY(${heldIds}::uuid[])`;
  const memberOf = new Map<string, Set<string>>();
  for (const members of whole) for (const id of members) memberOf.set(id, members);
  const grown = new Set<Set<string>>();
  for (const link of links) {
    const a = memberOf.get(link.source_job_id);
    const b = memberOf.get(link.replay_job_id);
    if (a === undefined || b === undefined || a !== b) for (const members of [a, b]) if (members) grown.add(members);
  }
  const ids = whole.filter((members) => !grown.has(members)).flatMap((members) => [...members]);
  if (s.dryRun) {
    const fresh = ids.filter((id) => !s.counted.has(id));
    for (const id of fresh) s.counted.add(id);
    return { deleted: fresh.length, next };
  }
  if (ids.length === 0) return { deleted: 0, next };

  // 4. Lineage rows first (a replay job cannot be deleted while its row exists), then the jobs (their events
  //    go with them, by the job_queue_delete_events trigger). The settled enqueue intents that name these jobs go
  //    too (else promoted intents would pile up forever); a pending intent is work not yet done and stays.
  await tx.$executeRaw`
    DELETE FROM runledger.job_replays WHERE source_job_id = ANY(${ids}::uuid[]) OR replay_job_id = ANY(${ids}::uuid[])`;
  await tx.$executeRaw`
    DELETE FROM runledger.job_enqueue_intents WHERE job_id = ANY(${ids}::uuid[]) AND state <> 'PENDING'`;
  const deleted = await tx.$executeRaw(...asTemplate(deleteJobsStatement(ids)));
  return { deleted, next };
}

/** Where one kind of purge reads its candidates and the lineage that binds them (fixed SQL fragments, no input). */
interface LineageSource {
  /** The candidate rows: finished, of the purgeable statuses, with `id` and `finished_at`. */
  candidates: (s: Settings) => Sql;
  /** The lineage table, aliased r, with its two ends as r.source and r.target. */
  links: Sql;
  /** The candidates' order (over `id` and `finished_at`), and the test that a candidate comes after `cursor` in it. */
  order: Sql;
  after: (cursor: Cursor) => Sql;
}

const JOB_LINEAGE: LineageSource = {
  candidates: (s) => sqltag`
      SELECT id, finished_at FROM runledger.job_queue
       WHERE id < ${uuidv7Floor(new Date(s.cutoff.getTime() + ID_CLOCK_MARGIN_MS))}::uuid
         AND workflow_step_id IS NULL AND status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED')`,
  links: sqltag`(SELECT source_job_id AS source, replay_job_id AS target FROM runledger.job_replays) r`,
  order: sqltag`id`,
  after: (cursor) => sqltag`id > ${cursor.id}::uuid`,
};

const RUN_LINEAGE: LineageSource = {
  candidates: (s) => sqltag`
      SELECT id, finished_at FROM runledger.workflow_runs
       WHERE status IN ${TERMINAL_RUN} AND status::text = ANY(${s.runStatuses}::text[])`,
  links: sqltag`(SELECT source_run_id AS source, recovery_run_id AS target FROM runledger.workflow_recoveries) r`,
  order: sqltag`finished_at, id`,
  after: (cursor) => sqltag`(finished_at, id) > (${cursor.finishedAt}::timestamptz, ${cursor.id}::uuid)`,
};

/** The next `batchSize` candidates after `cursor` in the source's order, each with every member of its lineage (walked both ways). */
async function walkCandidates(
  tx: Tx,
  from: LineageSource,
  s: Settings,
  cursor: Cursor | null,
): Promise<{ root: string; id: string; root_finished_at: string }[]> {
  return tx.$queryRaw<{ root: string; id: string; root_finished_at: string }[]>(
    ...asTemplate(sqltag`
    WITH RECURSIVE candidates AS (
      SELECT id, finished_at, row_number() OVER (ORDER BY ${from.order}) AS position FROM (
        SELECT id, finished_at FROM (${from.candidates(s)}) k
         WHERE finished_at < ${s.cutoff}::timestamptz ${cursor === null ? sqltag`` : sqltag`AND ${from.after(cursor)}`}
         ORDER BY ${from.order}
         LIMIT ${s.batchSize}
      ) k
    ),
    lineage(root, id) AS (
      SELECT id, id FROM candidates
      UNION
      SELECT l.root, CASE WHEN r.source = l.id THEN r.target ELSE r.source END
        FROM lineage l
        JOIN ${from.links} ON r.source = l.id OR r.target = l.id
    )
    SELECT l.root, l.id, c.finished_at::text AS root_finished_at
      FROM lineage l JOIN candidates c ON c.id = l.root
     ORDER BY c.position`),
  );
}

/**
 * A batch's candidates (`root`, in cursor order) walked to their lineages: the lineages, and where the next
 * batch starts (null when fewer than `batchSize` candidates were left).
 */
function lineagesOfBatch(
  walked: readonly { root: string; id: string; root_finished_at: string }[],
  batchSize: number,
): { lineages: Map<string, Set<string>>; next: Cursor | null } {
  const lastRoot = walked[walked.length - 1]!;
  const candidateCount = new Set(walked.map((w) => w.root)).size;
  return {
    lineages: groupLineages(walked),
    next: candidateCount < batchSize ? null : { finishedAt: lastRoot.root_finished_at, id: lastRoot.root },
  };
}

function groupLineages(walked: readonly { root: string; id: string }[]): Map<string, Set<string>> {
  // Two candidates of one lineage each walk to the same members: key each lineage by its smallest member.
  const byRoot = new Map<string, Set<string>>();
  for (const { root, id } of walked) {
    const members = byRoot.get(root) ?? new Set<string>();
    members.add(id);
    byRoot.set(root, members);
  }
  const lineages = new Map<string, Set<string>>();
  for (const members of byRoot.values()) lineages.set([...members].sort()[0]!, members);
  return lineages;
}

interface RunBatch {
  runs: number;
  jobs: number;
  next: Cursor | null;
}

async function purgeRunBatch(tx: Tx, s: Settings, cursor: Cursor | null): Promise<RunBatch> {
  // 1. Candidates (after the cursor) and the recovery lineage of each, walked both ways through workflow_recoveries.
  const walked = await walkCandidates(tx, RUN_LINEAGE, s, cursor);
  if (walked.length === 0) return { runs: 0, jobs: 0, next: null };
  const { lineages, next } = lineagesOfBatch(walked, s.batchSize);
  const runIds = [...new Set(walked.map((w) => w.id))];

  // Lock class 1: the runs' jobs. A run keeps everything if one of its jobs is held elsewhere, not finished,
  // or canceled and still quiescing.
  const jobs = await tx.$queryRaw<{ run_id: string; job_id: string; locked: boolean; purgeable: boolean }[]>`
    WITH run_jobs AS (
      SELECT s.workflow_run_id AS run_id, s.job_id FROM runledger.workflow_steps s
       WHERE s.workflow_run_id = ANY(${runIds}::uuid[]) AND s.job_id IS NOT NULL
    ),
    held AS (
      SELECT j.id,
             (j.status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED')
              AND NOT (j.status = 'CANCELED' AND j.lease_expires_at IS NOT NULL AND j.lease_expires_at > now())) AS purgeable
        FROM runledger.job_queue j
       WHERE j.id IN (SELECT job_id FROM run_jobs)
       ORDER BY j.id
         FOR UPDATE SKIP LOCKED
    )
    SELECT rj.run_id, rj.job_id, h.id IS NOT NULL AS locked, COALESCE(h.purgeable, false) AS purgeable
      FROM run_jobs rj LEFT JOIN held h ON h.id = rj.job_id`;
  const kept = new Set(jobs.filter((j) => !j.locked || !j.purgeable).map((j) => j.run_id));
  let eligible = runIds.filter((id) => !kept.has(id));
  if (eligible.length === 0) return { runs: 0, jobs: 0, next };

  // Lock class 2: their steps; a run with a step held elsewhere is kept.
  const steps = await tx.$queryRaw<{ workflow_run_id: string; locked: boolean }[]>`
    WITH held AS (
      SELECT id FROM runledger.workflow_steps WHERE workflow_run_id = ANY(${eligible}::uuid[]) ORDER BY id FOR UPDATE SKIP LOCKED
    )
    SELECT s.workflow_run_id, h.id IS NOT NULL AS locked
      FROM runledger.workflow_steps s LEFT JOIN held h ON h.id = s.id
     WHERE s.workflow_run_id = ANY(${eligible}::uuid[])`;
  const stepHeld = new Set(steps.filter((st) => !st.locked).map((st) => st.workflow_run_id));
  eligible = eligible.filter((id) => !stepHeld.has(id));
  if (eligible.length === 0) return { runs: 0, jobs: 0, next };

  // Lock class 4: the run rows, re-checking they are still finished before the cutoff (a recovery in progress
  // holds its source's row, so the source and its lineage are kept).
  const runs = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM runledger.workflow_runs
     WHERE id = ANY(${eligible}::uuid[])
       AND status IN ${TERMINAL_RUN}
       AND status::text = ANY(${s.runStatuses}::text[])
       AND finished_at < ${s.cutoff}::timestamptz
     ORDER BY id
       FOR UPDATE SKIP LOCKED`;
  const purgeable = new Set(runs.map((r) => r.id));
  const whole = [...lineages.values()].filter((members) => [...members].every((id) => purgeable.has(id)));
  if (whole.length === 0) return { runs: 0, jobs: 0, next };

  // Re-read the lineages of the runs now held: one that grew meanwhile is kept whole.
  const heldIds = [...new Set(whole.flatMap((members) => [...members]))];
  const links = await tx.$queryRaw<{ source_run_id: string; recovery_run_id: string }[]>`
    SELECT source_run_id, recovery_run_id FROM runledger.workflow_recoveries
     WHERE source_run_id = ANY(${heldIds}::uuid[]) OR recovery_run_id = ANY(${heldIds}::uuid[])`;
  const memberOf = new Map<string, Set<string>>();
  for (const members of whole) for (const id of members) memberOf.set(id, members);
  const grown = new Set<Set<string>>();
  for (const link of links) {
    const a = memberOf.get(link.source_run_id);
    const b = memberOf.get(link.recovery_run_id);
    if (a === undefined || b === undefined || a !== b) for (const members of [a, b]) if (members) grown.add(members);
  }
  const ids = whole.filter((members) => !grown.has(members)).flatMap((members) => [...members]);
  const fresh = s.dryRun ? ids.filter((id) => !s.counted.has(id)) : ids;
  const runSet = new Set(fresh);
  const jobCount = jobs.filter((j) => runSet.has(j.run_id)).length;
  if (s.dryRun) {
    for (const id of fresh) s.counted.add(id);
    return { runs: fresh.length, jobs: jobCount, next };
  }
  if (ids.length === 0) return { runs: 0, jobs: 0, next };

  // Lineage rows first (both runs are RESTRICTed), then the runs: their steps and edges (ON DELETE CASCADE), the
  // steps' jobs (the job -> step link cascades) and the jobs' events (trigger).
  await tx.$executeRaw`
    DELETE FROM runledger.workflow_recoveries WHERE source_run_id = ANY(${ids}::uuid[]) OR recovery_run_id = ANY(${ids}::uuid[])`;
  const deleted = await tx.$executeRaw`DELETE FROM runledger.workflow_runs WHERE id = ANY(${ids}::uuid[])`;
  return { runs: deleted, jobs: jobCount, next };
}
