/**
 * `npm run bench`: runledger (its hand loop, createWorker with its defaults and with a tuned batchSize) side by side
 * with pg-boss 12 and graphile-worker 0.18, and in the durable-function
 * workloads DBOS Transact 5.3 (bench/peers, installed on first use), in one run, on one PostgreSQL server, on the server's default
 * settings (synchronous_commit on) unless BENCH_SYNCHRONOUS_COMMIT is set.
 *
 * Each system's schema is installed once into a template database; every
 * repetition of every workload runs on a fresh clone of it, so no run sees
 * another's rows or bloat. Before measuring, every system runs every workload
 * it supports once at a tiny size (untimed), so none pays module compilation
 * and JIT warm-up inside a clock, and a broken adapter fails in seconds.
 * Everything started here is stopped in the `finally`; a watchdog bounds the run.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { startPostgresServer, type PostgresServer } from '../src/testing/postgres-server.js';
import { fromSource } from './runledger-package.js';
import { readConfig, type BenchConfig } from './config.js';
import { createDatabase, databaseUrl, dropDatabase, settledCommits, waitForNoConnections } from './db.js';
import { renderMarkdown } from './report.js';
import { spread } from './stats.js';
import { writeResults } from './results.js';
import type { BenchSystem } from './systems/types.js';
import { claimLatencyWorkload } from './workloads/claim-latency.js';
import { heldSnapshotWorkload, readHeldSnapshotSizes } from './workloads/held-snapshot.js';
import { fleetWorkload, readFleetSizes } from './fleet/fleet.js';
import { concurrencyKeysWorkload, readConcurrencyKeySizes } from './workloads/concurrency-keys.js';
import { rateLimitWorkload, readRateLimitSizes } from './workloads/rate-limit.js';
import { fairnessWorkload } from './workloads/fairness.js';
import { readFairnessSizes } from './workloads/fairness-table.js';
import { pickupLatencyWorkload } from './workloads/pickup-latency.js';
import { drainWorkload, enqueueBulkWorkload, enqueueSingleWorkload } from './workloads/queue.js';
import type { BenchContext, BenchResults, Workload, WorkloadResult } from './workloads/types.js';
import { wideFanOutWorkload } from './workloads/wide-fanout.js';
import { hostWriteWorkload } from './workloads/host-write.js';
import { functionChain3Workload, functionFanOutWorkload, functionSleepWorkload } from './workloads/functions.js';
import { chainsWorkload, fanOutWorkload } from './workloads/workflows.js';

function log(line: string): void {
  console.log(`[bench] ${line}`);
}

async function loadSystems(config: BenchConfig): Promise<BenchSystem[]> {
  // graphile-worker reads NO_LOG_SUCCESS when its modules load: set it before they are imported.
  process.env.NO_LOG_SUCCESS ??= '1';
  const wanted = (key: string) => config.systems === null || config.systems.includes(key);
  const { runledgerLoopSystem } = await import('./systems/runledger.js');
  const { runledgerWorkerSystem, runledgerTransactionalSystem, TUNED_WORKER_BATCH_SIZE } = await import('./systems/runledger-worker.js');
  const { runledgerDagSystem } = await import('./systems/runledger-dag.js');
  const { runledgerFunctionSystem } = await import('./systems/runledger-function.js');
  const systems: BenchSystem[] = [
    runledgerLoopSystem({ claimBatch: config.claimBatch }),
    runledgerWorkerSystem(),
    runledgerWorkerSystem({ batchSize: TUNED_WORKER_BATCH_SIZE }),
    runledgerWorkerSystem({ pool: true }),
    runledgerTransactionalSystem(),
    runledgerDagSystem('single'),
    runledgerDagSystem('batch'),
    runledgerFunctionSystem('single'),
    runledgerFunctionSystem('batch'),
  ];
  if (['pgboss', 'pgboss_fetch'].some(wanted)) {
    const { pgBossSystems } = await import('./systems/pg-boss.js');
    systems.push(...pgBossSystems({ claimBatch: config.claimBatch }));
  }
  if (['graphile', 'graphile_batched'].some(wanted)) {
    const { graphileWorkerSystems } = await import('./systems/graphile-worker.js');
    systems.push(...graphileWorkerSystems({ localQueueSize: config.graphileLocalQueue }));
  }
  if (['dbos', 'dbos_default_poll', 'dbos_steps'].some(wanted)) {
    const { dbosSystems } = await import('./systems/dbos.js');
    systems.push(...dbosSystems({ concurrency: config.concurrency, pollMs: config.functionQueuePollMs, poolSize: config.dbosPoolSize }));
  }
  // DBOS's default 1 s poll adds ~25 minutes to a full bench: it runs only when named.
  const optIn = new Set(['dbos_default_poll']);
  return systems.filter((s) => (optIn.has(s.key) ? config.systems?.includes(s.key) === true : wanted(s.key)));
}

function workloads(config: BenchConfig): Workload[] {
  const all = [
    chainsWorkload(config),
    fanOutWorkload(config),
    ...config.drainConcurrencies.map((c) => drainWorkload(config, c)),
    ...config.drainConcurrencies.map((c) => hostWriteWorkload(config, c)),
    enqueueBulkWorkload(config),
    enqueueSingleWorkload(config),
    pickupLatencyWorkload(config),
    wideFanOutWorkload(config.wideWidths, config.repeats),
    claimLatencyWorkload(config.claimLatency, config.skipBigClaim),
    heldSnapshotWorkload(readHeldSnapshotSizes(config), ['1', 'true', 'yes'].includes(process.env.BENCH_SKIP_HELD_SNAPSHOT ?? '')),
    fleetWorkload(readFleetSizes(config)),
    concurrencyKeysWorkload(readConcurrencyKeySizes(config)),
    rateLimitWorkload(readRateLimitSizes(config)),
    fairnessWorkload(readFairnessSizes(config)),
    functionChain3Workload(config),
    functionFanOutWorkload(config),
    functionSleepWorkload(config),
  ];
  return all.filter((w) => config.workloads === null || config.workloads.some((k) => w.key === k || w.key.startsWith(`${k}_`)));
}

/** Every supported workload once at a tiny size, untimed. */
async function warmUp(context: BenchContext, system: BenchSystem): Promise<void> {
  const c = context.config.concurrency;
  await context.withDatabase(system, async (url) => {
    if (system.enqueueBulk) await system.enqueueBulk(url, 2, 50);
    if (system.enqueueSingle) await system.enqueueSingle(url, 20, 5);
  });
  if (system.seedNoop && system.drain) {
    await context.withDatabase(system, async (url) => {
      await system.seedNoop!(url, 200);
      await system.drain!(url, { jobs: 200, concurrency: c });
    });
  }
  if (system.seedChains && system.chains) {
    await context.withDatabase(system, async (url) => {
      await system.seedChains!(url, 10);
      await system.chains!(url, { chains: 10, concurrency: c });
    });
  }
  if (system.seedFanOut && system.fanOut) {
    await context.withDatabase(system, async (url) => {
      await system.seedFanOut!(url, 2, 5);
      await system.fanOut!(url, { runs: 2, width: 5, concurrency: c });
    });
  }
  if (system.latency) await context.withDatabase(system, (url) => system.latency!(url, 5, c));
  if (system.functionChain3) await context.withDatabase(system, (url) => system.functionChain3!(url, { workflows: 5, concurrency: c }));
  if (system.functionFanOut) await context.withDatabase(system, (url) => system.functionFanOut!(url, { runs: 2, width: 3, concurrency: c }));
  if (system.functionSleep)
    await context.withDatabase(system, (url) => system.functionSleep!(url, { sleepers: 5, leadMs: 300, probeSleepers: 0, concurrency: c }));
}

async function serverFacts(admin: pg.Client): Promise<{ version: string; settings: Record<string, string> }> {
  const { rows } = await admin.query<{ name: string; setting: string }>(`SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[]) ORDER BY name`, [
    ['server_version', 'synchronous_commit', 'fsync', 'full_page_writes', 'shared_buffers', 'max_connections', 'autovacuum', 'shared_preload_libraries'],
  ]);
  // Empty settings (e.g. no shared_preload_libraries) say nothing; leave them out of the report.
  const all = Object.fromEntries(rows.filter((r) => r.setting !== '').map((r) => [r.name, r.setting]));
  const { server_version: version = 'unknown', ...settings } = all;
  return { version, settings };
}

/**
 * The median time of one autocommit single-row INSERT on this server: with
 * synchronous_commit on it is mostly the WAL flush, which bounds every
 * commit-per-call workload (single enqueue, latency, per-job completions) on
 * every system alike, and differs by an order of magnitude between disks.
 */
async function commitLatencyMs(admin: pg.Client, serverUrl: string): Promise<number> {
  const database = 'bench_commit_probe';
  await createDatabase(admin, database);
  try {
    const client = new pg.Client({ connectionString: databaseUrl(serverUrl, database) });
    await client.connect();
    try {
      await client.query('CREATE TABLE probe (id serial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())');
      const times: number[] = [];
      for (let i = 0; i < 100; i += 1) {
        const started = performance.now();
        await client.query('INSERT INTO probe DEFAULT VALUES');
        times.push(performance.now() - started);
      }
      return spread(times).median;
    } finally {
      await client.end();
    }
  } finally {
    await waitForNoConnections(admin, database);
    await dropDatabase(admin, database);
  }
}

async function runAll(server: PostgresServer, config: BenchConfig): Promise<BenchResults> {
  const started = performance.now();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const templates = new Map<string, string>();
  try {
    const facts = await serverFacts(admin);
    facts.settings['commit latency ms (median autocommit INSERT)'] = (await commitLatencyMs(admin, server.url)).toFixed(2);
    log(`PostgreSQL ${facts.version} (${server.kind}); ${config.quick ? 'quick sizes' : 'full sizes'}, ${config.repeats} run(s) per figure`);
    const systems = await loadSystems(config);
    for (const system of systems) {
      const template = `bench_tpl_${system.key}`;
      log(`install ${system.label} into ${template}`);
      await createDatabase(admin, template);
      templates.set(system.key, template);
      await system.install(databaseUrl(server.url, template));
      await settledCommits(admin, template, 0); // waits until the installer has closed its connections (cloning needs that)
    }
    const context: BenchContext = {
      config,
      admin,
      log,
      async withDatabase(system, fn, suffix) {
        const template = templates.get(system.key);
        if (!template) throw new Error(`no template for ${system.key}`);
        const database = `bench_run_${system.key}${suffix ? `_${suffix}` : ''}`;
        await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
        await admin.query(`CREATE DATABASE "${database}" TEMPLATE "${template}"`);
        try {
          const result = await fn(databaseUrl(server.url, database), database);
          await waitForNoConnections(admin, database);
          return result;
        } finally {
          await dropDatabase(admin, database);
        }
      },
    };
    for (const system of systems) {
      log(`warm-up (every workload at a tiny size, untimed): ${system.label}`);
      await warmUp(context, system);
    }
    const results: WorkloadResult[] = [];
    for (const workload of workloads(config)) results.push(...[await workload.run(context, systems)].flat());
    return {
      date: new Date().toISOString(),
      quick: config.quick,
      node: process.version,
      runledgerFrom: fromSource ? 'source' : 'dist',
      cpus: os.cpus().length,
      host: `${os.type()} ${os.release()} ${os.arch()}`,
      server: { kind: server.kind, version: facts.version, settings: facts.settings },
      config,
      systems: systems.map((s) => ({ key: s.key, label: s.label, peer: s.peer, description: s.describe() })),
      workloads: results,
      wallSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    for (const template of templates.values()) await dropDatabase(admin, template).catch(() => undefined);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const watchdogMs = Number(process.env.BENCH_TIMEOUT_MS ?? (config.quick ? 30 : 240) * 60_000);
  const settings: Record<string, string> = { max_connections: '200' };
  // The headline runs on the server's default; this is for comparing with a relaxed-durability run.
  if (config.synchronousCommit) settings.synchronous_commit = config.synchronousCommit;
  if (config.pgStatStatements) settings.shared_preload_libraries = 'pg_stat_statements';
  const server = await startPostgresServer({ containers: false, settings, log });
  let stopping: Promise<void> | undefined;
  const stopServer = (): Promise<void> => (stopping ??= server.stop());
  const watchdog = setTimeout(() => {
    console.error(`[bench] exceeded ${watchdogMs} ms; stopping`);
    void stopServer().finally(() => process.exit(1));
  }, watchdogMs);
  watchdog.unref();
  try {
    if (server.kind === 'url' && config.synchronousCommit)
      log('BENCH_SYNCHRONOUS_COMMIT applies to an embedded server only; the given server keeps its settings');
    const results = await runAll(server, config);
    console.log(`\n${renderMarkdown(results)}`);
    const files = await writeResults(results);
    log(`results written to ${files.json} and ${files.markdown} (and ${files.latest})`);
  } finally {
    clearTimeout(watchdog);
    await stopServer();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('[bench] failed:', error);
    process.exit(1);
  },
);
