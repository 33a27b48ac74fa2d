/** Workers for a test file: started with test defaults, always stopped after each test (the leak check needs it). */
import { afterEach } from 'vitest';
import { createWorker, silentLogger, type Worker, type WorkerOptions } from '../../src/worker/index.js';
import type { TestDatabase } from './database.js';

export function useWorkers(db: TestDatabase): (options: Partial<WorkerOptions> & Pick<WorkerOptions, 'handlers'>) => Promise<Worker> {
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
  });
  return async (options) => {
    const worker = createWorker({ db: db.prisma, logger: silentLogger, reaper: false, listen: false, pollIntervalMs: 50, ...options });
    workers.push(worker);
    await worker.start();
    return worker;
  };
}
