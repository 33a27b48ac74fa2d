/**
 * One process of the fleet workload (bench/fleet/fleet.ts): a `createWorker`
 * with its own pool, its own LISTEN connection and its own maintenance loops
 * (reaper, scheduler, intent promoter: createWorker's defaults, or all three
 * off when FLEET_MAINTENANCE=0). It connects and builds the worker, reports
 * `ready`, and starts only on `go`, so process start-up (tsx, module load)
 * stays outside the parent's clock. Successes of FLEET_COUNT_TYPE (any type
 * when empty) are reported in batches; on `stop` it stops the worker, closes
 * its pool and reports the statements it sent.
 */
import { z } from 'zod';
import { runledger } from '../runledger-package.js';
import { createCountingPrisma } from '../systems/runledger-client.js';
import type { FleetChildMessage, FleetParentMessage } from './messages.js';

// The built package (bench/runledger-package.ts), as the other runledger variants.
const { createWorker, defineJob, silentLogger } = runledger;

const url = process.env.FLEET_URL!;
const types = (process.env.FLEET_TYPES ?? '').split(',').filter((t) => t !== '');
const countType = process.env.FLEET_COUNT_TYPE ?? '';
const concurrency = Number(process.env.FLEET_CONCURRENCY ?? 10);
const maintenance = process.env.FLEET_MAINTENANCE !== '0';
// A diagnostic (concurrency_keys' BENCH_CK_POLL_MS): createWorker's poll interval instead of its default.
const pollIntervalMs = process.env.FLEET_POLL_INTERVAL_MS ? Number(process.env.FLEET_POLL_INTERVAL_MS) : undefined;

const send = (message: FleetChildMessage): void => {
  process.send?.(message);
};

const client = createCountingPrisma(url, concurrency + 4);
const worker = createWorker({
  db: client.prisma,
  listenConnectionString: url,
  handlers: types.map((type) => defineJob(type, z.unknown(), async () => undefined)),
  concurrency,
  ...(pollIntervalMs === undefined ? {} : { pollIntervalMs }),
  logger: silentLogger,
  ...(maintenance ? {} : { reaper: false as const, schedules: false as const, intents: false as const }),
});
let pending = 0;
worker.on('job:success', ({ job }) => {
  if (countType === '' || job.jobType === countType) pending += 1;
});
worker.on('worker:error', ({ error, operation }) => console.error(`[fleet ${process.pid}] ${operation} error:`, error));
const flush = setInterval(() => {
  if (pending > 0) {
    send({ t: 'done', n: pending });
    pending = 0;
  }
}, 20);

process.on('message', (message: FleetParentMessage) => {
  if (message.t === 'go') {
    worker.start().catch((error: unknown) => {
      console.error(`[fleet ${process.pid}] start failed:`, error);
      process.exit(1);
    });
  } else if (message.t === 'stop') {
    void (async () => {
      await worker.stop({ drainMs: 5_000 });
      clearInterval(flush);
      if (pending > 0) send({ t: 'done', n: pending });
      const statements = client.statements();
      await client.close();
      send({ t: 'stopped', statements });
      process.disconnect?.();
      process.exit(0);
    })();
  }
});

await client.prisma.$queryRaw`SELECT 1`;
send({ t: 'ready' });
