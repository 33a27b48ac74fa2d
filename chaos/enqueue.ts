/** The controller's own enqueues (the worker processes enqueue too). */
import { enqueueDirect, enqueueRun } from './api.js';
import type { Operator } from './operator.js';
import { buildShape, randomDirectJob, randomShape } from './shapes.js';

export async function enqueueRandomRun(operator: Operator): Promise<void> {
  const shape = randomShape();
  await operator.call(`enqueue_run.${shape}`, async () => (await enqueueRun(operator.client, buildShape(shape))).disposition);
}

export async function enqueueDirectBatch(operator: Operator): Promise<void> {
  await Promise.all(Array.from({ length: 3 }, () => operator.call('enqueue_job', async () => (await enqueueDirect(operator.client, randomDirectJob())).disposition)));
}
