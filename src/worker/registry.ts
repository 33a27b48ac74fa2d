/**
 * The worker registry (table runledger.workers, migration
 * 20261225000000_worker_registry): what runs against this database, for the
 * dashboard's workers and queues pages. Each createWorker upserts its own row
 * right after start and then every REGISTRY_INTERVAL_MS (jittered), and
 * deletes it when it stops. That is one statement per interval per worker,
 * never on a job's path: a job is claimed, run and completed without
 * touching the registry, and the in-flight count is read from the worker's
 * own counters when the pass runs.
 *
 * Expiry: a row is live until `expires_at`, its heartbeat plus
 * REGISTRY_TTL_INTERVALS intervals, so a crashed worker stops counting as
 * live within a few intervals (src/model/worker-registry.ts: the timing, and
 * when a row is stale). Rows expired for over an hour are deleted by
 * whichever worker heartbeats next, in the same statement, so the table holds
 * the fleet plus the last hour's departures and never grows.
 *
 * Locks: the upsert and the delete touch the worker's own row, and the
 * cleanup deletes only rows nobody heartbeats (expired an hour ago); two
 * cleanups racing skip nothing they need and wait on nothing but each other's
 * delete of the same dead row, which is short.
 */
import { hostname } from 'node:os';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { WorkerLogger } from '../job/logger.js';
import { REGISTRY_INTERVAL_MS, REGISTRY_TTL_INTERVALS } from '../model/worker-registry.js';
import { PeriodicLoop } from './periodic-loop.js';

/** How long an expired row stays visible (as departed) before a heartbeat deletes it. */
export const REGISTRY_KEEP_EXPIRED_MS = 3_600_000;

export interface WorkerRegistration {
  workerId: string;
  jobTypes: readonly string[];
  concurrency: number;
}

export interface WorkerRegistryOptions extends WorkerRegistration {
  db: Db;
  logger: WorkerLogger;
  /** The worker's leases held now (running handlers, buffered jobs). */
  inFlight: () => number;
  onError: (error: unknown) => void;
  /** Default REGISTRY_INTERVAL_MS. */
  intervalMs?: number;
}

/** Upserts the worker's row (live for `ttlMs`) and deletes rows expired for over an hour. One statement. */
export async function heartbeatWorkerRegistration(db: Db, registration: WorkerRegistration & { inFlight: number; ttlMs: number }): Promise<void> {
  const host = hostname().slice(0, 255);
  await withStatement(
    db,
    'worker registry heartbeat',
    async (tx) => tx.$executeRaw`
    WITH expired AS (
      DELETE FROM runledger.workers w
       WHERE w.expires_at < now() - ${REGISTRY_KEEP_EXPIRED_MS}::float8 * interval '1 millisecond'
         AND w.id <> ${registration.workerId}
    )
    INSERT INTO runledger.workers (id, host, pid, job_types, concurrency, in_flight, started_at, last_seen_at, expires_at)
    VALUES (${registration.workerId}, ${host}, ${process.pid}::int, ${[...registration.jobTypes]}::text[], ${registration.concurrency}::int,
            ${registration.inFlight}::int, now(), now(), now() + ${registration.ttlMs}::float8 * interval '1 millisecond')
    ON CONFLICT (id) DO UPDATE
       SET host = EXCLUDED.host, pid = EXCLUDED.pid, job_types = EXCLUDED.job_types, concurrency = EXCLUDED.concurrency,
           in_flight = EXCLUDED.in_flight, last_seen_at = EXCLUDED.last_seen_at, expires_at = EXCLUDED.expires_at`,
  );
}

/** Deletes the worker's row: it stopped. */
export async function removeWorkerRegistration(db: Db, workerId: string): Promise<void> {
  await withStatement(db, 'worker registry removal', async (tx) => tx.$executeRaw`DELETE FROM runledger.workers WHERE id = ${workerId}`);
}

export class WorkerRegistryLoop extends PeriodicLoop {
  /** How long a heartbeat keeps the row live. */
  private readonly ttlMs: number;

  constructor(private readonly options: WorkerRegistryOptions) {
    const intervalMs = options.intervalMs ?? REGISTRY_INTERVAL_MS;
    super(intervalMs, 'now');
    this.ttlMs = intervalMs * REGISTRY_TTL_INTERVALS;
  }

  /** One heartbeat. Never throws: the registry is for operators, a failure only makes the worker look stale. */
  protected async pass(): Promise<void> {
    const { db, workerId, jobTypes, concurrency, logger } = this.options;
    try {
      await heartbeatWorkerRegistration(db, { workerId, jobTypes, concurrency, inFlight: this.options.inFlight(), ttlMs: this.ttlMs });
    } catch (error) {
      logger.warn('worker registry heartbeat failed; the next pass retries', { error });
      this.options.onError(error);
    }
  }

  /** Stops the heartbeats and deletes the row (a failure is reported; the row then expires on its own). */
  async deregister(): Promise<void> {
    await this.stop();
    try {
      await removeWorkerRegistration(this.options.db, this.options.workerId);
    } catch (error) {
      this.options.logger.warn('worker registry removal failed; the row expires on its own', { error });
      this.options.onError(error);
    }
  }
}
