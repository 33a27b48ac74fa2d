/**
 * `npx tsx bench/latency-only.ts`: only scenario (d) of the bench (enqueue ->
 * handler start, sequential jobs), for runledger (hand loop and createWorker)
 * and graphile-worker with default options, in one process against one
 * PostgreSQL server, in interleaved rounds so that a loaded machine's noise
 * falls on every system alike. Prints each round and the median of the
 * rounds' p50 / p95.
 *
 *   LAT_ROUNDS=3                 rounds (default 3), each BENCH_LATENCY_JOBS jobs per system
 *   LAT_SYSTEMS=a,b              keys to run (default: all below)
 *   LAT_BASE=/path/to/checkout   also run that checkout's runledger systems (keys base_loop,
 *                                base_worker) side by side: before/after in one run
 *
 * Same server settings, databases and system adapters as `npm run bench`.
 */
import pg from 'pg';
import { startPostgresServer } from '../src/testing/postgres-server.js';
import { SERVER_SETTINGS, readConfig } from './config.js';
import { createDatabase, databaseUrl, dropDatabase } from './db.js';
import { summarizeLatency } from './report.js';
import type { BenchSystem } from './systems/types.js';

/** Untimed jobs each system runs first in its own database. */
const WARMUP_JOBS = 50;

async function loadSystems(): Promise<BenchSystem[]> {
  process.env.NO_LOG_SUCCESS ??= '1';
  const systems: BenchSystem[] = [];
  const base = process.env.LAT_BASE;
  if (base) {
    const loop = (await import(`${base}/bench/systems/runledger.ts`)) as { runledgerSystem: BenchSystem };
    const worker = (await import(`${base}/bench/systems/runledger-worker.ts`)) as { runledgerWorkerSystem: BenchSystem };
    systems.push({ ...loop.runledgerSystem, key: 'base_loop' }, { ...worker.runledgerWorkerSystem, key: 'base_worker' });
  }
  const { runledgerSystem } = await import('./systems/runledger.js');
  const { runledgerWorkerSystem } = await import('./systems/runledger-worker.js');
  const { graphileWorkerSystem } = await import('./systems/graphile-worker.js');
  systems.push(runledgerSystem, runledgerWorkerSystem, graphileWorkerSystem(false));
  const only = process.env.LAT_SYSTEMS?.split(',');
  return only ? systems.filter((s) => only.includes(s.key)) : systems;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const config = readConfig();
  const rounds = Number(process.env.LAT_ROUNDS ?? 3);
  const systems = await loadSystems();
  const server = await startPostgresServer({ containers: false, settings: { ...SERVER_SETTINGS }, log: () => undefined });
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const urls = new Map<string, string>();
    for (const system of systems) {
      const database = `lat_${system.key}`;
      await createDatabase(admin, database);
      await admin.query(`ALTER DATABASE "${database}" SET synchronous_commit = off`);
      const url = databaseUrl(server.url, database);
      urls.set(system.key, url);
      await system.install(url);
      await system.latency(url, { ...config, latencyJobs: WARMUP_JOBS });
    }
    const results = new Map<string, { p50: number; p95: number }[]>();
    for (let round = 0; round < rounds; round += 1) {
      for (const system of systems) {
        const summary = summarizeLatency(await system.latency(urls.get(system.key)!, config));
        const list = results.get(system.key) ?? [];
        list.push({ p50: summary.pickupP50Ms, p95: summary.pickupP95Ms });
        results.set(system.key, list);
        console.log(`round ${round} ${system.key.padEnd(18)} pickup p50 ${summary.pickupP50Ms.toFixed(2)} p95 ${summary.pickupP95Ms.toFixed(2)} ms`);
      }
    }
    for (const [key, list] of results) {
      console.log(`median ${key.padEnd(18)} p50 ${median(list.map((r) => r.p50)).toFixed(2)} p95 ${median(list.map((r) => r.p95)).toFixed(2)} ms`);
    }
    for (const system of systems) await dropDatabase(admin, `lat_${system.key}`);
  } finally {
    await admin.end();
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('[latency] failed:', error);
    process.exit(1);
  },
);
