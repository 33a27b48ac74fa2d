/**
 * Step records of every durable function a process runs on one client, sent together: a record goes at once
 * when none is in flight; the ones that finish meanwhile (parallel steps, other functions' steps) wait for it
 * and share the next statement (recordFunctionSteps). Each step's promise settles only once its row is
 * committed, or with `job.lease_owner_mismatch` when its own lease is gone, so batching changes no step's
 * outcome, only how many statements and commits carry them (a worker of ten functions committed a record per
 * step before: docs/concepts/durable-functions.md, "One step, one statement").
 */
import type { Db } from '../client/types.js';
import { recordFunctionSteps, stepLeaseLost, type RecordedStepRow, type StepToRecord } from './function-statements.js';

/** Most steps one record statement carries. */
const RECORD_BATCH = 100;

interface Queued {
  item: StepToRecord;
  resolve: (row: RecordedStepRow) => void;
  reject: (error: unknown) => void;
}

class RecordBatch {
  private readonly queue: Queued[] = [];
  private sending = false;

  constructor(private readonly db: Db) {}

  record(item: StepToRecord): Promise<RecordedStepRow> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.sending) return;
      this.sending = true;
      void this.send();
    });
  }

  /** Sends the queue a statement at a time until it is empty; never rejects (each step gets its outcome). */
  private async send(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, RECORD_BATCH);
      try {
        const rows = await recordFunctionSteps(
          this.db,
          batch.map((queued) => queued.item),
          false,
        );
        batch.forEach((queued, i) => {
          const row = rows[i];
          if (row) queued.resolve(row);
          else queued.reject(stepLeaseLost(queued.item.lease, queued.item.step.stepKey));
        });
      } catch (error) {
        for (const queued of batch) queued.reject(error);
      }
    }
    this.sending = false;
  }
}

const batches = new WeakMap<object, RecordBatch>();

/** Records a finished plain step through `db`'s shared batch (see the module comment). */
export function recordThroughBatch(db: Db, item: StepToRecord): Promise<RecordedStepRow> {
  let batch = batches.get(db);
  if (batch === undefined) {
    batch = new RecordBatch(db);
    batches.set(db, batch);
  }
  return batch.record(item);
}
