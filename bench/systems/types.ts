/**
 * What the runner asks of each system variant. Every method opens its own
 * connections and closes them all before it returns, so the runner can read
 * settled commit counters around it. A variant implements only the workloads
 * that are meaningful for it (variants sharing an enqueue path implement the
 * enqueue workloads once); the runner skips the missing ones.
 *
 * A workload is `seed*` (untimed, its commits not counted) then the timed
 * method, which processes until the last expected write is committed.
 */

/** A timed run. The clock covers only the work itself; start-up and teardown are outside. */
export interface Timed {
  wallMs: number;
  /** Commits the harness itself made on the system's database (warm-up query, completion polling), to subtract. */
  harnessCommits: number;
  /** Statements the client sent (BEGIN/COMMIT included), where the variant counts them (runledger). */
  statements?: number;
}

export interface LatencySample {
  /** Enqueue call start -> handler invoked (ms). */
  pickupMs: number;
  /** Enqueue call start -> completion committed (ms); null when the system does not expose that moment. */
  completeMs: number | null;
}

export interface DrainInput {
  jobs: number;
  concurrency: number;
}

export interface ChainsInput {
  chains: number;
  concurrency: number;
}

export interface FanOutInput {
  runs: number;
  width: number;
  concurrency: number;
}

/** function_chain3: `workflows` three-step workflows started with `concurrency` running at once (bench/workloads/functions.ts). */
export interface FunctionChainInput {
  workflows: number;
  concurrency: number;
}

/** function_fanout: `runs` of 1 -> width -> 1, `concurrency` runs at once. */
export interface FunctionFanOutInput {
  runs: number;
  width: number;
  concurrency: number;
}

/** function_sleep: `sleepers` workflows sleeping to one wake time, `leadMs` after the first start. */
export interface FunctionSleepInput {
  sleepers: number;
  leadMs: number;
  /** The slot probe: this many sleepers on a queue of `concurrency` (bench/workloads/functions.ts). */
  probeSleepers: number;
  concurrency: number;
}

export interface FunctionSleepMeasure {
  /** First start call -> last start call returned (ms). */
  startMs: number;
  /** First start call -> the wake time (ms). */
  leadMs: number;
  /** Sleepers that began their sleep after the wake time (the lead was too short for them). */
  startedAfterWake: number;
  /** Resume time - wake time, one per sleeper that began its sleep before the wake time (ms). */
  latenessMs: number[];
  /** Queued sleepers of the probe, and how many of them began sleeping before the wake time. */
  probe: { queued: number; concurrency: number; sleptBeforeWake: number };
}

export interface BenchSystem {
  /** Short key, also used in database names. */
  readonly key: string;
  /** Display name. */
  readonly label: string;
  /** runledger variants are measured; the others are the peers the ratios compare against. */
  readonly peer: boolean;
  /** How the variant is configured for each workload, for the report. */
  describe(): string;
  /** Creates the system's schema through its own API (once, into a template database). */
  install(url: string): Promise<void>;

  enqueueBulk?(url: string, batches: number, batchSize: number): Promise<Timed>;
  enqueueSingle?(url: string, jobs: number, inFlight: number): Promise<Timed>;

  seedNoop?(url: string, jobs: number): Promise<void>;
  drain?(url: string, input: DrainInput): Promise<Timed>;

  seedChains?(url: string, chains: number): Promise<void>;
  chains?(url: string, input: ChainsInput): Promise<Timed>;

  seedFanOut?(url: string, runs: number, width: number): Promise<void>;
  fanOut?(url: string, input: FanOutInput): Promise<Timed>;

  latency?(url: string, jobs: number, concurrency: number): Promise<LatencySample[]>;

  /**
   * Durable-function workloads (bench/workloads/functions.ts): the clock runs
   * from the first start call to the last completion committed, starting
   * included. A runledger system with key `runledger_function` implementing
   * these is the slot the durable-function API fills (bench/README.md).
   */
  functionChain3?(url: string, input: FunctionChainInput): Promise<Timed>;
  functionFanOut?(url: string, input: FunctionFanOutInput): Promise<Timed>;
  functionSleep?(url: string, input: FunctionSleepInput): Promise<FunctionSleepMeasure>;

  /** Drains `seedNoop`'s jobs with a handler that inserts one row into HOST_ROWS_TABLE per job (bench/workloads/host-write.ts). */
  hostWrite?(url: string, input: DrainInput): Promise<Timed>;
}

/** The job type / task name / queue name of the no-op jobs. */
export const BENCH_JOB_TYPE = 'bench_noop';
/** Chains: A -> B -> C. */
export const CHAIN_STEPS = ['chain_a', 'chain_b', 'chain_c'] as const;
/** Fan-out/fan-in: root -> width x child -> fan-in. */
export const FAN_ROOT = 'fan_root';
export const FAN_CHILD = 'fan_child';
export const FAN_IN = 'fan_in';
/** The host application's table the host-write workload's handlers insert one row per job into. */
export const HOST_ROWS_TABLE = 'bench_host_rows';
/** Peers keep the fan-in counter here (created by seedFanOut); runledger counts in its own dependency rows. */
export const FAN_COUNTER_TABLE = 'bench_fan_counter';
