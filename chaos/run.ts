/**
 * `npm run chaos -- --seconds N --workers K`: runledger under real faults.
 *
 * K worker processes (children; see worker-process.ts) run direct jobs and
 * workflows (diamonds, 200-wide fan-out/fan-in, external gates, on-terminal
 * edges; handlers that fail, retry with retryNotBefore, time out, return
 * large outputs) and enqueue work, idempotent duplicates included. For N
 * seconds the controller, at random: SIGKILLs workers and starts
 * replacements, terminates backends, refuses connections for a few seconds,
 * cancels runs, completes external steps (twice, conflicting), replays
 * succeeded jobs (same key twice) and requeues dead-lettered ones. Then it
 * drains and checks (verify.ts): integrity checker clean, every run terminal,
 * one terminal notification per run, every execution accounted for, zero
 * deadlocks, no undocumented error at a caller. Exit 1 on any violation.
 *
 * Embedded PostgreSQL unless DATABASE_URL names a server (a scratch database
 * and role are created on it and dropped at the end). `--pooler`: the workers
 * and the controller's API calls go through a transaction-mode PgBouncer
 * (statements unnamed, `pgbouncer=true`), LISTEN and the controller's
 * observations and faults direct; backend terminations and outages then hit
 * the pooler's server connections.
 */
import pg from 'pg';
import { checkIntegrity, connect } from './api.js';
import { createChaosDatabase } from './database.js';
import { pooledTotals, startChaosPooler } from './pooler.js';
import { outage, terminateSomeBackends } from './faults.js';
import { TerminalNotificationCounter } from './listener.js';
import type { ChildMessage, DuplicateMessage } from './messages.js';
import { Operator } from './operator.js';
import { enqueueDirectBatch, enqueueDuplicatePair, enqueueKeyedBatch, enqueueRandomRun, enqueueRatedBatch } from './enqueue.js';
import { sampleSequenceClock } from './key-ledger.js';
import { ChaosStats } from './stats.js';
import { printSummary } from './summary.js';
import { deadlockCount, describeViolation, verifyChaosRun } from './verify.js';
import { WorkerFleet } from './workers.js';

const DRAIN_TIMEOUT_MS = 240_000;

function parseArgs(argv: string[]): { seconds: number; workers: number; pooler: boolean } {
  const value = (name: string, fallback: number) => {
    const i = argv.indexOf(name);
    if (i < 0) return fallback;
    const n = Number(argv[i + 1]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} needs a positive integer`);
    return n;
  };
  return { seconds: value('--seconds', 45), workers: value('--workers', 3), pooler: argv.includes('--pooler') };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const between = (min: number, max: number) => min + Math.random() * (max - min);

async function main(): Promise<number> {
  const { seconds, workers, pooler: viaPooler } = parseArgs(process.argv.slice(2));
  const t0 = Date.now();
  const say = (line: string) => process.stdout.write(`[chaos ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}\n`);
  const stats = new ChaosStats();
  const duplicates: DuplicateMessage[] = [];

  const database = await createChaosDatabase();
  say(
    `database ${database.name} on ${database.server.kind === 'embedded' ? 'embedded PostgreSQL' : 'DATABASE_URL'}${database.canRefuseConnections ? '' : ' (cannot create a role: outages skipped)'}`,
  );
  const pooler = viaPooler
    ? await startChaosPooler(database).catch(async (error: unknown) => {
        await database.drop();
        return Promise.reject(error);
      })
    : undefined;
  if (pooler) say(`through ${pooler.version} (pool_mode = transaction): workers and API calls pooled, LISTEN direct`);
  const workUrl = pooler?.url ?? database.url;
  const admin = new pg.Pool({ connectionString: database.adminUrl, max: 4, application_name: 'chaos-controller' });
  const api = connect(workUrl, 6);
  const counter = new TerminalNotificationCounter(database.adminUrl);
  await counter.start();
  const deadlocksBefore = await deadlockCount(admin, database.name);

  const onMessage = (message: ChildMessage) => {
    if (message.t === 'op') {
      if (message.error) stats.callerError(message.kind, message.error);
      else stats.count(message.kind, message.outcome);
    } else if (message.t === 'dup') duplicates.push(message);
    else stats.workerLog(message.level, message.message, message.error);
  };
  const fleet = new WorkerFleet(workUrl, database.url, stats, onMessage);
  for (let i = 0; i < workers; i += 1) fleet.start();
  const operator = new Operator(api, admin, stats);
  let exitCode = 1;

  try {
    say(`${workers} workers started; chaos for ${seconds} s`);
    const until = Date.now() + seconds * 1_000;
    let duplicateKeys = 0;
    const actor = async (name: string, pauseMs: () => number, act: () => Promise<void>) => {
      while (Date.now() < until) {
        await sleep(pauseMs());
        if (Date.now() >= until) break;
        try {
          await act();
        } catch (error) {
          // The controller's own reads can fail during an outage or a termination: that is the chaos, not a finding.
          stats.count(`controller.${name}`, error instanceof Error ? error.message.slice(0, 60) : 'error');
        }
      }
    };
    await Promise.all([
      actor(
        'enqueue',
        () => between(100, 300),
        async () => {
          if (Math.random() < 0.5) await enqueueRandomRun(operator);
          else await enqueueDirectBatch(operator);
        },
      ),
      actor(
        'enqueue_keyed',
        () => between(100, 250),
        () => enqueueKeyedBatch(operator),
      ),
      actor(
        'enqueue_rated',
        () => between(1_000, 3_000),
        () => enqueueRatedBatch(operator),
      ),
      actor(
        'cancel_keyed',
        () => between(200, 600),
        () => operator.cancelKeyedJob(),
      ),
      actor(
        // job_events' sequence read with the clock: where a canceled lease's run-out falls (key-ledger.ts).
        'sequence_clock',
        () => 50,
        () => sampleSequenceClock(admin),
      ),
      actor(
        'duplicates',
        () => between(800, 1_500),
        async () => {
          // Several processes (every worker process and the controller) enqueue the same keyed job and run at once.
          duplicateKeys += 1;
          const key = `dup-${duplicateKeys}`;
          fleet.broadcastDuplicates(key);
          await enqueueDuplicatePair(
            api,
            key,
            (kind, fn) => operator.call(kind, fn),
            (message) => duplicates.push(message),
          );
        },
      ),
      actor(
        'kill',
        () => between(2_000, 5_000),
        async () => {
          const killed = fleet.killRandom();
          if (!killed) return;
          stats.faults.kills += 1;
          say(`SIGKILL ${killed}`);
          await sleep(between(100, 1_500));
          say(`started ${fleet.start()}`);
          stats.faults.replacements += 1;
        },
      ),
      actor(
        'terminate',
        () => between(1_500, 4_000),
        () => terminateSomeBackends(admin, database, stats),
      ),
      actor(
        'outage',
        () => between(6_000, 12_000),
        async () => {
          const ms = Math.round(between(1_500, 4_000));
          say(`outage: connections refused for ${ms} ms`);
          await outage(admin, database, stats, ms);
        },
      ),
      actor(
        'verify_live',
        () => between(6_000, 10_000),
        async () => {
          // Every transition commits whole, and each page of the checker reads one snapshot: a live check is clean too.
          await operator.call('verify_integrity_live', async () => {
            const report = await checkIntegrity(api);
            for (const v of report.violations) stats.violation(`live integrity: ${describeViolation(v)}`);
            return report.clean ? 'clean' : 'violations';
          });
        },
      ),
      actor(
        'operate',
        () => between(100, 400),
        async () => {
          const roll = Math.random();
          if (roll < 0.15) await operator.cancelRandomRun();
          else if (roll < 0.45) await operator.completeExternalSteps(3);
          else if (roll < 0.55) await operator.approveFunctionRuns(3);
          else if (roll < 0.8) await operator.replayRandomSucceeded();
          else await operator.requeueDeadLettered();
        },
      ),
    ]);

    say('draining: no new work, every worker up, external steps completed');
    fleet.stopEnqueuing();
    // Enqueues already sent finish (or fail) within their own timeouts; the drain below needs two quiet checks in a row.
    await sleep(1_000);
    await admin.query(`ALTER DATABASE "${database.name}" CONNECTION LIMIT -1`).catch(() => undefined);
    while (fleet.size < workers) fleet.start();
    const drainUntil = Date.now() + DRAIN_TIMEOUT_MS;
    let quiet = 0;
    for (;;) {
      await operator.completeExternalSteps(500, true).catch(() => 0);
      await operator.approveFunctionRuns(500).catch(() => 0);
      const { rows } = await admin.query<{ runs: number; jobs: number }>(`
        SELECT (SELECT count(*) FROM runledger.workflow_runs WHERE status IN ('RUNNING', 'WAITING_FOR_EXTERNAL'))::int AS runs,
               (SELECT count(*) FROM runledger.job_queue WHERE status IN ('PENDING', 'LEASED'))::int AS jobs`);
      quiet = rows[0]!.runs === 0 && rows[0]!.jobs === 0 ? quiet + 1 : 0;
      if (quiet === 2) break;
      if (Date.now() > drainUntil) {
        stats.violation(`drain did not finish within ${DRAIN_TIMEOUT_MS / 1000} s: ${rows[0]!.runs} runs and ${rows[0]!.jobs} jobs still live`);
        break;
      }
      await sleep(500);
    }
    // A canceled lease holds its key's slot until it runs out and a worker's reaper deletes it: wait for that,
    // sampling the sequence meanwhile, so the key checks see every lease ended.
    const leasesUntil = Date.now() + 30_000;
    for (;;) {
      await sampleSequenceClock(admin).catch(() => undefined);
      const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM runledger.job_leases');
      if (rows[0]!.n === 0) break;
      if (Date.now() > leasesUntil) {
        stats.violation(`lease rows still live 30 s after the drain (the reaper deletes run-out ones): ${rows[0]!.n}`);
        break;
      }
      await sleep(250);
    }
    await sampleSequenceClock(admin).catch(() => undefined);
    say('drained; stopping workers');
    await fleet.stopAll(20_000);
    for (const exit of fleet.unexpectedExits) stats.violation(`worker process: ${exit}`);
    await counter.flush();
    await sleep(300);

    say('verifying');
    const findings = await verifyChaosRun(api, admin, stats, counter, duplicates, deadlocksBefore, database.name);
    if (pooler) say(`pooled: ${await pooledTotals(pooler.adminUrl).catch((error: unknown) => `no totals (${String(error)})`)}`);
    printSummary({ seconds, workers, elapsedMs: Date.now() - t0, stats, findings });
    exitCode = stats.violations.length === 0 ? 0 : 1;
  } finally {
    await fleet.stopAll(5_000).catch(() => undefined);
    await counter.close().catch(() => undefined);
    await api.$disconnect().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await pooler?.stop().catch(() => undefined);
    await database.drop().catch((error: unknown) => say(`could not drop the chaos database: ${String(error)}`));
  }
  return exitCode;
}

const code = await main().catch((error: unknown) => {
  process.stderr.write(`chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return 1;
});
process.stdout.write(`chaos run ${code === 0 ? 'passed' : 'FAILED'} (exit ${code})\n`);
process.exit(code);
