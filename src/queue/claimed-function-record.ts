/**
 * The recorded steps of a durable function, read by the claim that leased its body's job (claim-jobs.ts), so
 * the attempt needs no read of its own (src/workflow/function-define.ts). Kept beside the ClaimedJob object,
 * not on it: ClaimedJob is public and this is the engine's.
 */
import type { ClaimedJob } from '../job/claimed-job.js';
import type { JsonValue } from '../model/json.js';

export interface ClaimedFunctionRecord {
  /** The run's FUNCTION steps in call order, as the claim's snapshot had them. */
  steps: { stepKey: string; callIndex: number; output: JsonValue | null }[];
  /** The database clock minus the local clock, when the claim's rows arrived (ms). */
  clockOffset: number;
}

/** As the claim returns it: `[step key, call index, output]` per step, and its clock (ms since epoch). */
export interface ClaimedFunctionRecordRow {
  now: number;
  steps: [string, number, JsonValue | null][];
}

const records = new WeakMap<ClaimedJob, ClaimedFunctionRecord>();

export function keepClaimedFunctionRecord(job: ClaimedJob, row: ClaimedFunctionRecordRow, receivedAt: number): void {
  records.set(job, {
    steps: row.steps.map(([stepKey, callIndex, output]) => ({ stepKey, callIndex, output })),
    clockOffset: row.now - receivedAt,
  });
}

/** The record the claim read for `job`'s attempt, once: a later attempt of the same lease reads its own. */
export function takeClaimedFunctionRecord(job: ClaimedJob): ClaimedFunctionRecord | undefined {
  const record = records.get(job);
  records.delete(job);
  return record;
}
