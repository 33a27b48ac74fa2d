/**
 * What the runner asks of each queue under test. One instance per system and
 * database; every method opens its own connections and closes them all before
 * it returns, so the runner can read settled commit counters afterwards.
 */
import type { BenchConfig } from '../config.js';

/**
 * A timed phase. The clock starts once the system's client is started and
 * warm (connected, first query done) and stops when the last write is
 * committed; start-up and teardown are outside it.
 */
export interface PhaseTiming {
  wallMs: number;
  /** Commits the harness itself made on the system's database (warm-up, completion polling), to subtract. */
  harnessCommits: number;
}

export interface DrainResult extends PhaseTiming {
  /** Jobs the system reported as completed. */
  completed: number;
}

export interface LatencySample {
  /** Enqueue call start -> handler invoked (ms). */
  pickupMs: number;
  /** Enqueue call start -> completion committed (ms); null when the system does not expose that moment. */
  completeMs: number | null;
}

export interface BenchSystem {
  /** Short key, also used in the database name. */
  readonly key: string;
  /** Display name. */
  readonly label: string;
  /** How the system is configured for this run, for the report. */
  describe(config: BenchConfig): string;
  /** Creates the system's schema through its own API. */
  install(url: string): Promise<void>;
  /** Scenario a: enqueues `config.jobs` no-op jobs in batches of `config.enqueueBatch`. */
  enqueue(url: string, config: BenchConfig): Promise<PhaseTiming>;
  /** Scenario b: claims, runs and completes every enqueued job, then stops. */
  drain(url: string, config: BenchConfig): Promise<DrainResult>;
  /** Scenario d: with a worker running, enqueues `config.latencyJobs` jobs one at a time. */
  latency(url: string, config: BenchConfig): Promise<LatencySample[]>;
  /** Jobs left unfinished in the database (a correctness check after scenario b). */
  countUnfinished(url: string): Promise<number>;
}

/** The job type / task name / queue name every system uses. */
export const BENCH_JOB_TYPE = 'bench_noop';
