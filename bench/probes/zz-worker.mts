import { z } from 'zod';
import { createPrismaClient } from '../../src/client/connect.js';
import { createWorker, defineJob, enqueueJobs, silentLogger } from '../../src/index.js';
const url = process.env.PROBE_URL!;
const prisma = createPrismaClient(url, { max: 14 });
const N = 20000;
async function seed() {
  for (let i = 0; i < N; i += 1000)
    await enqueueJobs(
      prisma,
      Array.from({ length: 1000 }, (_, k) => ({ jobType: 'probe.w', payload: { n: i + k } })),
    );
}
async function run(label: string) {
  await seed();
  let done = 0;
  let resolve!: () => void;
  const finished = new Promise<void>((r) => (resolve = r));
  const worker = createWorker({
    db: prisma,
    listenConnectionString: url,
    handlers: [defineJob('probe.w', z.unknown(), async () => undefined)],
    concurrency: 10,
    logger: silentLogger,
    reaper: false,
  });
  worker.on('job:success', () => {
    if (++done === N) resolve();
  });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await worker.start();
  await finished;
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  await worker.stop({ drainMs: 5000 });
  console.log(
    `${label}: ${Math.round((N / wall) * 1000)} jobs/s, node cpu ${((c.user + c.system) / N).toFixed(1)} us/job, wall ${((wall * 1000) / N).toFixed(1)} us/job`,
  );
}
await run('warm');
await run('run');
await prisma.$disconnect();
