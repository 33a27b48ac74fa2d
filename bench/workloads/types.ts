/** What a workload is, and the result shapes written to bench/results/. */
import type pg from 'pg';
import type { BenchConfig } from '../config.js';
import type { Spread } from '../stats.js';
import type { BenchSystem } from '../systems/types.js';
import type { TupleCounts, TupleSnapshot } from '../tuples.js';

export interface BenchContext {
  config: BenchConfig;
  /** Superuser connection to the server's maintenance database (reads counters; creates and drops databases). */
  admin: pg.Client;
  log(line: string): void;
  /**
   * Clones the system's installed template into a fresh database, runs `fn`, drops the database.
   * `suffix` names a second database beside the first, for a workload that needs two at once.
   */
  withDatabase<R>(system: BenchSystem, fn: (url: string, database: string) => Promise<R>, suffix?: string): Promise<R>;
}

export interface Workload {
  key: string;
  /** Only these systems; default: every system that implements what the workload needs. */
  /** One result, or several tables when a workload's database answers more than one question (claim latency). */
  run(context: BenchContext, systems: BenchSystem[]): Promise<WorkloadResult | WorkloadResult[]>;
}

/** One repetition of a throughput workload. */
export interface RepMeasure {
  wallMs: number;
  units: number;
  rate: number;
  /** pg_stat_database.xact_commit delta of the system's database, harness commits subtracted. */
  commits: number;
  commitsPerUnit: number;
  statements: number | null;
  statementsPerUnit: number | null;
  /** pg_stat_user_tables deltas over every user table of the system's database (see bench/tuples.ts). */
  tuples: TupleCounts;
  /** The same per table ("schema.table"), tables that changed only. */
  tuplesByTable: TupleSnapshot;
  /** Inserted + updated + deleted tuples. */
  rowsWritten: number;
  rowsWrittenPerUnit: number;
  /** HOT updates (a subset of the updates: no index entry written). */
  hotUpdatesPerUnit: number;
  /** Btree entries written to the database's indexes, from the WAL (bench/wal.ts); null where it could not be read. */
  indexEntriesPerUnit: number | null;
  /** This Node process's user + system CPU over the timed part, in microseconds per unit (the system's client side: every system runs in-process). */
  nodeCpuUsPerUnit: number;
  /** Rows the untimed seeding wrote (runledger: the workflow runs, steps, dependencies, first jobs; the peers: their first jobs). */
  seedRowsWritten: number;
  /** (rowsWritten + seedRowsWritten) / units: what one counter delta over the whole workload would say. */
  rowsWrittenWithSeedPerUnit: number;
}

export interface ThroughputRow {
  system: string;
  label: string;
  peer: boolean;
  reps: RepMeasure[];
  rate: Spread;
  commitsPerUnit: Spread;
  statementsPerUnit: Spread | null;
  /** Rows (tuples) inserted + updated + deleted per unit; absent in results written before the bench counted them. */
  rowsWrittenPerUnit?: Spread;
  /** HOT updates per unit (included in rowsWrittenPerUnit). */
  hotUpdatesPerUnit?: Spread;
  /** Index entries per unit (bench/wal.ts); absent in results written before the bench counted them, null where unread. */
  indexEntriesPerUnit?: Spread | null;
  /** Rows written per unit, the untimed seeding's included. */
  rowsWrittenWithSeedPerUnit?: Spread;
  /** Node CPU (user + system us) per unit; absent in results written before the bench measured it. */
  nodeCpuUsPerUnit?: Spread;
  /** Median rate / the best peer variant's median rate: > 1 means faster than the best peer. Null for peers. */
  ratioToBestPeer: number | null;
}

export interface LatencyRep {
  count: number;
  pickupP50Ms: number;
  pickupP95Ms: number;
  completeP50Ms: number | null;
  completeP95Ms: number | null;
}

export interface LatencyRow {
  system: string;
  label: string;
  peer: boolean;
  reps: LatencyRep[];
  pickupP50: Spread;
  pickupP95: Spread;
  completeP50: Spread | null;
  completeP95: Spread | null;
  /** Best peer's median p50 / this median p50: > 1 means lower latency than the best peer. Null for peers. */
  ratioP50ToBestPeer: number | null;
  ratioP95ToBestPeer: number | null;
}

interface WorkloadResultBase {
  key: string;
  title: string;
  /** The sizes that ran, in words. */
  size: string;
  notes: string[];
}

export interface ThroughputResult extends WorkloadResultBase {
  kind: 'throughput';
  /** What a unit is: "jobs" or "steps". */
  unit: string;
  bestPeer: string | null;
  rows: ThroughputRow[];
}

export interface LatencyResult extends WorkloadResultBase {
  kind: 'latency';
  bestPeer: string | null;
  rows: LatencyRow[];
}

/** Workloads with their own columns (runledger only: wide fan-out, claim latency). */
export interface TableResult extends WorkloadResultBase {
  kind: 'table';
  headers: string[];
  rows: (string | number | null)[][];
  /** The measurements behind the table, for tools. */
  data: unknown;
  /** No runledger system ran it (DBOS's sleep): the headline shows `headlineSummary` in the peer column. */
  peerOnly?: boolean;
  headlineSummary?: string;
  /** A headline cell per runledger system that ran it (system key -> cell); the peers' summary is `headlineSummary`. */
  headlineBySystem?: { [systemKey: string]: string };
}

export type WorkloadResult = ThroughputResult | LatencyResult | TableResult;

export interface BenchResults {
  date: string;
  quick: boolean;
  node: string;
  /** What the runledger variants ran: the built package (dist/) or the sources through tsx (bench/runledger-package.ts). */
  runledgerFrom?: 'dist' | 'source';
  cpus: number;
  host: string;
  server: { kind: string; version: string; settings: Record<string, string> };
  config: BenchConfig;
  systems: { key: string; label: string; peer: boolean; description: string }[];
  workloads: WorkloadResult[];
  wallSeconds: number;
}
