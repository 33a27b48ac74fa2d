/** Enqueues by the controller and the worker processes. */
import { enqueueDirect, enqueueRun, type Client } from './api.js';
import type { DuplicateMessage } from './messages.js';
import type { Operator } from './operator.js';
import { buildShape, randomDirectJob, randomKeyedJob, randomRatedJob, randomRateKey, randomShape } from './shapes.js';

export async function enqueueRandomRun(operator: Operator): Promise<void> {
  const shape = randomShape();
  await operator.call(`enqueue_run.${shape}`, async () => (await enqueueRun(operator.client, buildShape(shape))).disposition);
}

export async function enqueueDirectBatch(operator: Operator): Promise<void> {
  await Promise.all(
    Array.from({ length: 3 }, () => operator.call('enqueue_job', async () => (await enqueueDirect(operator.client, randomDirectJob())).disposition)),
  );
}

/** A burst of concurrency-keyed jobs (more than the keys' limits take at once, so they queue on their keys). */
export async function enqueueKeyedBatch(operator: Operator): Promise<void> {
  await Promise.all(
    Array.from({ length: 8 }, () => operator.call('enqueue_keyed', async () => (await enqueueDirect(operator.client, randomKeyedJob())).disposition)),
  );
}

/**
 * A burst of rate-limited jobs on one key, more than its bucket holds and than it gains in a period: the key is
 * saturated for a while, its jobs PENDING until tokens come back.
 */
export async function enqueueRatedBatch(operator: Operator): Promise<void> {
  const rate = randomRateKey();
  await Promise.all(
    Array.from({ length: 30 }, () => operator.call('enqueue_rated', async () => (await enqueueDirect(operator.client, randomRatedJob(rate))).disposition)),
  );
}

/**
 * The idempotent job and run of `key`, which every worker process and the
 * controller enqueue at the same moment: each answer is recorded, and the
 * end of the run checks that all of them name one job and one run.
 */
export async function enqueueDuplicatePair(
  client: Client,
  key: string,
  call: (kind: string, fn: () => Promise<string>) => Promise<void>,
  record: (message: DuplicateMessage) => void,
): Promise<void> {
  await Promise.all([
    call('enqueue_idempotent_job', async () => {
      const result = await enqueueDirect(client, { jobType: 'chaos.ok', payload: { n: 7 }, idempotencyKey: `${key}-job` });
      record({ t: 'dup', kind: 'job', key, id: result.jobId, disposition: result.disposition });
      return result.disposition;
    }),
    call('enqueue_idempotent_run', async () => {
      const result = await enqueueRun(client, buildShape('diamond', `${key}-run`));
      record({ t: 'dup', kind: 'run', key, id: result.workflowRunId, disposition: result.disposition });
      return result.disposition;
    }),
  ]);
}
