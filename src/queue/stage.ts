/**
 * Stages and progress of a running job: what `ctx.setStage` and
 * `ctx.progress` write. One statement each, fenced to the exact lease like
 * every lifecycle write (src/queue/lifecycle.ts: the row is locked first and
 * the clock read after), writing the job's `stage` or `progress` and its
 * STAGE_CHANGED / PROGRESS event together; a lost lease is
 * `job.lease_owner_mismatch` and writes nothing. Neither extends the lease
 * (heartbeats do). A stage set to the one the job already has appends no
 * event.
 */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../model/json.js';
import { leaseMismatch, type LeaseIdentity } from './lease.js';
import {
  JOB_INVALID_INPUT,
  recordJobProgressInputSchema,
  setJobStageInputSchema,
  type ParsedJobLease,
  type RecordJobProgressInput,
  type SetJobStageInput,
} from './inputs.js';
import { asTemplate } from '../db/sql-template.js';
import { writeStageOrProgressStatement } from './statements/stage-or-progress.js';

/** Numeric progress as stored (`{ processed, total }`) and returned. */
export interface JobProgress {
  processed: number;
  /** null: the total is unknown. */
  total: number | null;
}

/**
 * Sets the running job's stage, for a hand-written loop (a handler uses
 * `ctx.setStage`): `job.invalid_input` naming `stage`, `job.lease_owner_mismatch`
 * once the lease is gone.
 *
 * @example
 * await setJobStage(prisma, { ...job, stage: 'uploading' });
 */
export async function setJobStage(db: Db, input: SetJobStageInput): Promise<{ jobId: string; stage: string }> {
  const parsed = parseInput(setJobStageInputSchema, input, JOB_INVALID_INPUT);
  await writeFenced(db, leaseOnly(parsed), { stage: parsed.stage });
  return { jobId: parsed.jobId, stage: parsed.stage };
}

/**
 * Records the running job's progress (stored as `{ processed, total }` in its
 * `progress`, with a PROGRESS event), for a hand-written loop (a handler uses
 * `ctx.progress`).
 *
 * @example
 * await recordJobProgress(prisma, { ...job, processed: 40, total: 100 });
 */
export async function recordJobProgress(db: Db, input: RecordJobProgressInput): Promise<JobProgress> {
  const parsed = parseInput(recordJobProgressInputSchema, input, JOB_INVALID_INPUT);
  const progress = { processed: parsed.processed, total: parsed.total ?? null };
  await writeFenced(db, leaseOnly(parsed), { progress });
  return progress;
}

function leaseOnly(lease: ParsedJobLease): LeaseIdentity {
  return { jobId: lease.jobId, runNumber: lease.runNumber, attempt: lease.attempt, workerId: lease.workerId };
}

type Change = { stage: string } | { progress: JobProgress };

async function writeFenced(db: Db, l: LeaseIdentity, change: Change): Promise<void> {
  const isStage = 'stage' in change;
  const stage = isStage ? change.stage : null;
  const progress: JsonValue | null = isStage ? null : { processed: change.progress.processed, total: change.progress.total };
  const eventId = newId();
  await withStatement(db, isStage ? 'set job stage' : 'record job progress', async (client) => {
    const rows = await client.$queryRaw<{ id: string }[]>(...asTemplate(writeStageOrProgressStatement(l, isStage, stage, progress, eventId)));
    if (!rows[0]) throw leaseMismatch(l, isStage ? 'set job stage' : 'record job progress');
  });
}
