/**
 * `npm run bench`: runledger side by side with pg-boss and graphile-worker, in
 * one run, on one PostgreSQL server, one fresh database per system.
 *
 * Order: install every system, then each scenario for every system in turn
 * (a: enqueue N; b: drain those N; c: commits of b; d: sequential latency).
 * Commit counts are read from the maintenance database after the system has
 * closed all its connections (see settledCommits). Everything started here is
 * stopped in the `finally`, and a watchdog bounds the whole run.
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startPostgresServer, type PostgresServer } from '../src/testing/postgres-server.js';
import { SERVER_SETTINGS, readConfig, type BenchConfig } from './config.js';
import { createDatabase, databaseUrl, dropDatabase, settledCommits } from './db.js';
import { renderReport, summarizeLatency, type BenchResults, type PhaseResult, type SystemResult } from './report.js';
import type { BenchSystem, PhaseTiming } from './systems/types.js';

const WATCHDOG_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 10 * 60_000);
/** Jobs each system enqueues and drains in its untimed warm-up. */
const WARMUP_JOBS = 200;

interface Target {
  system: BenchSystem;
  database: string;
  url: string;
}

function log(line: string): void {
  console.log(`[bench] ${line}`);
}

async function loadSystems(): Promise<BenchSystem[]> {
  // graphile-worker reads NO_LOG_SUCCESS when its modules load: set it before importing them.
  process.env.NO_LOG_SUCCESS ??= '1';
  const { runledgerSystem } = await import('./systems/runledger.js');
  const { pgBossSystem } = await import('./systems/pg-boss.js');
  const { graphileWorkerSystem } = await import('./systems/graphile-worker.js');
  const { runledgerWorkerSystem } = await import('./systems/runledger-worker.js');
  return [runledgerSystem, runledgerWorkerSystem, pgBossSystem, graphileWorkerSystem(false), graphileWorkerSystem(true)];
}

/** Times `fn` and counts the commits it caused on the target's database. */
async function measured(
  admin: pg.Client,
  target: Target,
  jobs: number,
  fn: () => Promise<PhaseTiming>,
): Promise<PhaseResult> {
  const before = await settledCommits(admin, target.database);
  const { wallMs, harnessCommits } = await fn();
  const after = await settledCommits(admin, target.database);
  const commits = after - before - harnessCommits;
  return { jobs, wallMs, jobsPerSecond: (jobs / wallMs) * 1000, commits, commitsPerJob: commits / jobs };
}

async function serverFacts(admin: pg.Client): Promise<{ version: string; settings: Record<string, string> }> {
  const { rows } = await admin.query<{ name: string; setting: string }>(
    `SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[]) ORDER BY name`,
    [['server_version', 'synchronous_commit', 'fsync', 'full_page_writes', 'shared_buffers', 'max_connections', 'autovacuum']],
  );
  const all = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  const { server_version: version = 'unknown', ...settings } = all;
  return { version, settings };
}

async function runAll(server: PostgresServer, config: BenchConfig): Promise<BenchResults> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const targets: Target[] = [];
  try {
    const facts = await serverFacts(admin);
    log(`PostgreSQL ${facts.version} (${server.kind}); N=${config.jobs}, concurrency=${config.concurrency}`);
    for (const system of await loadSystems()) {
      const database = `bench_${system.key}`;
      await createDatabase(admin, database);
      // Applies on any server, including one given by DATABASE_URL, for every system alike.
      await admin.query(`ALTER DATABASE "${database}" SET synchronous_commit = off`);
      targets.push({ system, database, url: databaseUrl(server.url, database) });
    }
    for (const t of targets) {
      log(`install ${t.system.label}`);
      await t.system.install(t.url);
    }

    // Warm-up: every system enqueues and drains a small batch in a throwaway database first, so no system
    // (in particular the first one measured) pays its module compilation and JIT warm-up inside a clock.
    const warmConfig: BenchConfig = { ...config, jobs: Math.min(config.jobs, WARMUP_JOBS), enqueueBatch: Math.min(config.enqueueBatch, WARMUP_JOBS) };
    for (const t of targets) {
      log(`warm-up (${warmConfig.jobs} jobs): ${t.system.label}`);
      const database = `${t.database}_warmup`;
      await createDatabase(admin, database);
      try {
        const url = databaseUrl(server.url, database);
        await t.system.install(url);
        await t.system.enqueue(url, warmConfig);
        await t.system.drain(url, warmConfig);
        await settledCommits(admin, database, 0); // waits until the system has closed its connections
      } finally {
        await dropDatabase(admin, database);
      }
    }

    const enqueue = new Map<Target, PhaseResult>();
    for (const t of targets) {
      log(`(a) enqueue ${config.jobs} jobs: ${t.system.label}`);
      enqueue.set(t, await measured(admin, t, config.jobs, () => t.system.enqueue(t.url, config)));
    }

    const drain = new Map<Target, PhaseResult & { unfinishedAfter: number }>();
    for (const t of targets) {
      log(`(b) claim+run+complete ${config.jobs} jobs: ${t.system.label}`);
      let completed = 0;
      const phase = await measured(admin, t, config.jobs, async () => {
        const result = await t.system.drain(t.url, config);
        completed = result.completed;
        return result;
      });
      const unfinishedAfter = await t.system.countUnfinished(t.url);
      if (completed !== config.jobs || unfinishedAfter !== 0) {
        throw new Error(`${t.system.label}: ${completed} of ${config.jobs} jobs reported done, ${unfinishedAfter} left unfinished`);
      }
      drain.set(t, { ...phase, unfinishedAfter });
    }

    const systems: SystemResult[] = [];
    for (const t of targets) {
      log(`(d) latency, ${config.latencyJobs} sequential jobs: ${t.system.label}`);
      const samples = await t.system.latency(t.url, config);
      systems.push({
        key: t.system.key,
        label: t.system.label,
        description: t.system.describe(config),
        enqueue: enqueue.get(t)!,
        drain: drain.get(t)!,
        latency: summarizeLatency(samples),
      });
    }

    return {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      server: { kind: server.kind, version: facts.version, settings: { ...facts.settings, 'synchronous_commit (bench databases)': 'off' } },
      config,
      systems,
      notes: [
        'one server, one database per system; synchronous_commit=off for every system (server flag and ALTER DATABASE), fsync left on',
        'throughput clocks start once the system\'s client is started and warm (graphile-worker drain: at its first task, one fetch in) and stop at the last committed write; start-up and teardown are outside',
        'commit counts include each system\'s own start-up queries and one start-up transaction per new connection',
        'pg-boss latency uses work() woken by notifyWorker() after send (its in-process best case; pg-boss 10 has no LISTEN/NOTIFY, a producer in another process waits for the next poll, >= 0.5 s)',
        'graphile-worker completes jobs without awaiting the commit, so its completion latency is not observable (n/a)',
        'noisy on small machines: compare ratios within one run, not absolute numbers across runs',
      ],
    };
  } finally {
    for (const t of targets) await dropDatabase(admin, t.database).catch(() => undefined);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const server = await startPostgresServer({ containers: false, settings: { ...SERVER_SETTINGS }, log });
  let stopping: Promise<void> | undefined;
  const stopServer = (): Promise<void> => (stopping ??= server.stop());
  const watchdog = setTimeout(() => {
    console.error(`[bench] exceeded ${WATCHDOG_MS} ms; stopping`);
    void stopServer().finally(() => process.exit(1));
  }, WATCHDOG_MS);
  watchdog.unref();
  try {
    const results = await runAll(server, config);
    console.log(`\n${renderReport(results)}\n`);
    const file = path.join(os.tmpdir(), `runledger-bench-${results.date.replace(/[:.]/g, '-')}.json`);
    await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
    log(`results written to ${file}`);
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
