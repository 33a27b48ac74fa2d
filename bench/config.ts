/**
 * Benchmark parameters, read once from the environment. Every system gets the
 * same numbers in one run; change them with BENCH_* variables.
 */

export interface BenchConfig {
  /** Jobs enqueued (scenario a) and then drained (scenario b). */
  jobs: number;
  /** Concurrent workers: claim loops for runledger and pg-boss, `concurrency` for graphile-worker. */
  concurrency: number;
  /** Jobs per enqueue call. */
  enqueueBatch: number;
  /** Jobs per claim/fetch (runledger claimJobs limit, pg-boss batchSize, graphile-worker localQueue.size in the batched variant). */
  claimBatch: number;
  /** Jobs enqueued one at a time in the latency scenario. */
  latencyJobs: number;
}

/** Server settings applied to the one PostgreSQL the benchmark starts (identical for every system). */
export const SERVER_SETTINGS: Readonly<Record<string, string>> = {
  // Durability of each commit is not what is compared; fsync stays on (default).
  synchronous_commit: 'off',
  max_connections: '200',
};

function positiveIntFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

export function readConfig(): BenchConfig {
  return {
    jobs: positiveIntFromEnv('BENCH_JOBS', 5000),
    concurrency: positiveIntFromEnv('BENCH_CONCURRENCY', 10),
    enqueueBatch: positiveIntFromEnv('BENCH_ENQUEUE_BATCH', 500),
    claimBatch: positiveIntFromEnv('BENCH_CLAIM_BATCH', 20),
    latencyJobs: positiveIntFromEnv('BENCH_LATENCY_JOBS', 200),
  };
}
