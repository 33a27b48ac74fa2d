/**
 * Benchmark sizes and switches, read once from the environment. Every system
 * gets the same numbers in one run. Two size sets: the full one (the issue's
 * workloads, including the 10M/1M claim table, which takes minutes to build;
 * BENCH_SKIP_BIG_CLAIM=1 leaves it out) and BENCH_QUICK=1 (a smoke run that
 * proves every workload runs for every system in a few minutes). Any size can
 * be overridden by its variable.
 */

export interface ClaimLatencySizes {
  /** Finished (SUCCEEDED) rows of other types, the "history". */
  finished: number;
  /** PENDING rows of other types, due earlier than the claimed type's, so they sit ahead in the claim index. */
  otherPending: number;
  /** Sequential claims timed on each table. */
  samples: number;
  /** `claimJobs` limit per call. */
  limit: number;
}

export interface BenchConfig {
  quick: boolean;
  /** BENCH_BIG=1: the full claim-table size even in a quick run (the full run has it by default). */
  big: boolean;
  /** BENCH_SKIP_BIG_CLAIM=1: no claim-latency workload (its 11M-row table takes minutes to build). */
  skipBigClaim: boolean;
  /** Repetitions of each (system, workload); medians, min and max are reported. */
  repeats: number;
  /** Handler concurrency of the workflow, enqueue-latency and default drain workloads. */
  concurrency: number;
  drainJobs: number;
  drainConcurrencies: number[];
  chains: number;
  fanOutRuns: number;
  fanOutWidth: number;
  enqueueBatches: number;
  enqueueBatchSize: number;
  enqueueSingleJobs: number;
  enqueueInFlight: number;
  latencyJobs: number;
  /** Jobs per claim of the runledger hand loop, per fetch of the pg-boss variants. */
  claimBatch: number;
  /** graphile-worker's `localQueue.size` in its batched variant. */
  graphileLocalQueue: number;
  /** Dependents of the one prerequisite in the wide fan-out workload. */
  wideWidths: number[];
  claimLatency: ClaimLatencySizes;
  /** function_chain3: three-step workflows started. */
  functionWorkflows: number;
  /** function_fanout: runs of 1 -> fanOutWidth -> 1. */
  functionFanOutRuns: number;
  /** function_sleep: sleeping workflows. */
  functionSleepers: number;
  /** function_sleep: first start call -> wake time; null: max(5 s, 15 ms per sleeper). */
  functionSleepLeadMs: number | null;
  /** DBOS queues' minPollingIntervalMs (and the children's result poll) in the fast-poll variant. */
  functionQueuePollMs: number;
  /** DBOS's systemDatabasePoolSize; null: its default (10). */
  dbosPoolSize: number | null;
  /** Only these workloads (keys), when set. */
  workloads: string[] | null;
  /** Only these systems (keys), when set. */
  systems: string[] | null;
  /** `synchronous_commit` for the embedded server; the headline runs on the default (on). */
  synchronousCommit: string | null;
  /**
   * Preload pg_stat_statements in the embedded server, so the wide fan-out
   * also reports the statements the server executed (a cross-check of the
   * client-side count). Off by default: the headline runs on server defaults.
   */
  pgStatStatements: boolean;
}

function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

function intListFromEnv(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  return raw.split(',').map((part) => {
    const value = Number(part.trim());
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a comma-separated list of positive integers, got "${raw}"`);
    return value;
  });
}

function listFromEnv(name: string): string[] | null {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return null;
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

const flag = (name: string): boolean => ['1', 'true', 'yes'].includes((process.env[name] ?? '').toLowerCase());

export function readConfig(): BenchConfig {
  const quick = flag('BENCH_QUICK');
  const big = flag('BENCH_BIG');
  const pick = (full: number, small: number): number => (quick ? small : full);
  // The table: 10M finished rows and 1M pending jobs of other types.
  const claimDefaults: ClaimLatencySizes =
    quick && !big
      ? { finished: 20_000, otherPending: 2_000, samples: 30, limit: 10 }
      : { finished: 10_000_000, otherPending: 1_000_000, samples: 200, limit: 10 };
  return {
    quick,
    big,
    skipBigClaim: flag('BENCH_SKIP_BIG_CLAIM'),
    repeats: intFromEnv('BENCH_REPEATS', pick(3, 1)),
    concurrency: intFromEnv('BENCH_CONCURRENCY', 10),
    drainJobs: intFromEnv('BENCH_DRAIN_JOBS', pick(20_000, 1_000)),
    drainConcurrencies: intListFromEnv('BENCH_DRAIN_CONCURRENCIES', [10, 50]),
    chains: intFromEnv('BENCH_CHAINS', pick(1_000, 50)),
    fanOutRuns: intFromEnv('BENCH_FANOUT_RUNS', pick(100, 5)),
    fanOutWidth: intFromEnv('BENCH_FANOUT_WIDTH', 20),
    enqueueBatches: intFromEnv('BENCH_ENQUEUE_BATCHES', pick(20, 4)),
    enqueueBatchSize: intFromEnv('BENCH_ENQUEUE_BATCH_SIZE', pick(1_000, 250)),
    enqueueSingleJobs: intFromEnv('BENCH_ENQUEUE_SINGLE_JOBS', pick(2_000, 200)),
    enqueueInFlight: intFromEnv('BENCH_ENQUEUE_IN_FLIGHT', 10),
    latencyJobs: intFromEnv('BENCH_LATENCY_JOBS', pick(200, 30)),
    claimBatch: intFromEnv('BENCH_CLAIM_BATCH', 50),
    graphileLocalQueue: intFromEnv('BENCH_GRAPHILE_LOCAL_QUEUE', 500),
    wideWidths: intListFromEnv('BENCH_WIDE_WIDTHS', quick ? [100, 1_000] : [100, 1_000, 10_000]),
    claimLatency: {
      finished: intFromEnv('BENCH_CLAIM_FINISHED', claimDefaults.finished),
      otherPending: intFromEnv('BENCH_CLAIM_OTHER_PENDING', claimDefaults.otherPending),
      samples: intFromEnv('BENCH_CLAIM_SAMPLES', claimDefaults.samples),
      limit: intFromEnv('BENCH_CLAIM_LIMIT', claimDefaults.limit),
    },
    functionWorkflows: intFromEnv('BENCH_FUNCTION_WORKFLOWS', pick(1_000, 200)),
    functionFanOutRuns: intFromEnv('BENCH_FUNCTION_FANOUT_RUNS', pick(100, 20)),
    functionSleepers: intFromEnv('BENCH_FUNCTION_SLEEPERS', pick(10_000, 500)),
    functionSleepLeadMs: process.env.BENCH_FUNCTION_SLEEP_LEAD_MS ? intFromEnv('BENCH_FUNCTION_SLEEP_LEAD_MS', 1) : null,
    functionQueuePollMs: intFromEnv('BENCH_FUNCTION_QUEUE_POLL_MS', 10),
    dbosPoolSize: process.env.BENCH_DBOS_POOL_SIZE ? intFromEnv('BENCH_DBOS_POOL_SIZE', 1) : null,
    workloads: listFromEnv('BENCH_WORKLOADS'),
    systems: listFromEnv('BENCH_SYSTEMS'),
    synchronousCommit: process.env.BENCH_SYNCHRONOUS_COMMIT?.trim() || null,
    pgStatStatements: flag('BENCH_PG_STAT_STATEMENTS'),
  };
}
