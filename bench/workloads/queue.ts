/**
 * Plain-queue workloads: drain N no-op jobs at a given concurrency (seeded
 * untimed), enqueue in bulk batches, and enqueue one call per job with a
 * bounded number of calls in flight.
 */
import type { BenchConfig } from '../config.js';
import { throughputWorkload } from './throughput.js';
import type { Workload } from './types.js';

export function drainWorkload(config: BenchConfig, concurrency: number): Workload {
  const jobs = config.drainJobs;
  return throughputWorkload({
    key: `drain_c${concurrency}`,
    title: `drain ${jobs.toLocaleString('en-US')} no-op jobs, concurrency ${concurrency}`,
    size: `${jobs} jobs`,
    unit: 'jobs',
    units: jobs,
    supports: (s) => typeof s.drain === 'function' && typeof s.seedNoop === 'function',
    seed: (s, url) => s.seedNoop!(url, jobs),
    run: (s, url) => s.drain!(url, { jobs, concurrency }),
  });
}

export function enqueueBulkWorkload(config: BenchConfig): Workload {
  const { enqueueBatches: batches, enqueueBatchSize: size } = config;
  return throughputWorkload({
    key: 'enqueue_bulk',
    title: `enqueue bulk, ${batches} x ${size.toLocaleString('en-US')}`,
    size: `${batches} calls of ${size} jobs`,
    unit: 'jobs',
    units: batches * size,
    notes: [
      'one variant per system and client: the enqueue path does not depend on the worker configuration; runledger through its Prisma client (hand loop) and through poolDb(pool) (the db: pg Pool variant)',
    ],
    supports: (s) => typeof s.enqueueBulk === 'function',
    run: (s, url) => s.enqueueBulk!(url, batches, size),
  });
}

export function enqueueSingleWorkload(config: BenchConfig): Workload {
  const { enqueueSingleJobs: jobs, enqueueInFlight: inFlight } = config;
  return throughputWorkload({
    key: 'enqueue_single',
    title: `enqueue single, one call per job, ${inFlight} in flight`,
    size: `${jobs} jobs`,
    unit: 'jobs',
    units: jobs,
    notes: [
      'runledger enqueueJob (notifies) through its Prisma client (hand loop) and through poolDb(pool) (the db: pg Pool variant), pg-boss send to a queue with notify off (its default and faster enqueue), graphile-worker addJob (notifies)',
    ],
    supports: (s) => typeof s.enqueueSingle === 'function',
    run: (s, url) => s.enqueueSingle!(url, jobs, inFlight),
  });
}
