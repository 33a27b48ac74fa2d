/**
 * The durable-function crash probe (issue 37), shared by bench/probes/function-crash.ts (long) and
 * test/integration/function-crash.test.ts (short): `runs` functions of test/harness/function-proof.ts are
 * started at once, then worker processes (test/fixtures/function-crash/worker.ts) are SIGKILLed one after
 * another while the workers' connections are terminated (pg_terminate_backend) in between, for
 * `faultWindowMs`; then one worker drains the rest and the invariants are read from the database.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { enqueueWorkflowRuns, type Db } from '../../src/index.js';
import { PROOF_DDL, proofRun, sendApproval, verifyFunctionProof, type ProofFindings } from './function-proof.js';

const WORKER = fileURLToPath(new URL('../fixtures/function-crash/worker.ts', import.meta.url));
const APP = 'fncrash-worker';

export interface CrashProbeOptions {
  /** The probe's database (a fresh one: the DDL is created there). */
  url: string;
  /** Superuser-or-owner pool on it: DDL, terminations, the final reads. */
  admin: pg.Pool;
  /** A client to start the runs with. */
  db: Db;
  runs: number;
  /** Each run sleeps a random time in this range (ms). */
  sleepMs: [number, number];
  /** Faults for this long; then one worker drains. */
  faultWindowMs: number;
  /** A worker process lives this long (random in the range) before its SIGKILL. */
  lifeMs: [number, number];
  /** Worker processes alive at once during the fault window. */
  workers?: number;
  /** How long the drain may take. */
  drainTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface CrashProbeReport extends ProofFindings {
  kills: number;
  /** Runs that had finished when the faults stopped (the rest finished in the drain after them). */
  finishedInWindow: number;
  /** Termination rounds that cut at least one connection, and the connections cut. */
  terminations: { rounds: number; backends: number };
  wallMs: number;
}

function workerUrl(url: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}application_name=${APP}`;
}

/** Starts a worker process (added to `alive` at once, so a failed run still kills it) and resolves once it runs. */
async function spawnWorker(url: string, workerId: string, alive: Set<ChildProcess>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, workerUrl(url), workerId], { stdio: ['ignore', 'pipe', 'inherit'] });
  alive.add(child);
  const lines = createInterface({ input: child.stdout! });
  await new Promise<void>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line === 'ready') resolve();
    });
    child.once('exit', () => reject(new Error(`worker ${workerId} exited before it was ready`)));
  });
  return child;
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await exited;
}

const between = ([min, max]: [number, number]) => min + Math.floor(Math.random() * (max - min + 1));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runFunctionCrashProbe(options: CrashProbeOptions): Promise<CrashProbeReport> {
  const { admin, runs } = options;
  const log = options.log ?? (() => undefined);
  await admin.query(PROOF_DDL);
  const started = performance.now();
  const runIds: string[] = [];
  for (let at = 0; at < runs; at += 500) {
    const batch = Array.from({ length: Math.min(500, runs - at) }, (_, i) => proofRun(at + i, between(options.sleepMs)));
    runIds.push(...(await enqueueWorkflowRuns(options.db, batch)).map((result) => result.workflowRunId));
  }
  const unfinished = async () =>
    Number(
      (
        await admin.query<{ n: string }>(
          `SELECT count(*) AS n FROM runledger.workflow_runs WHERE id = ANY($1::uuid[]) AND status IN ('RUNNING', 'WAITING_FOR_EXTERNAL')`,
          [runIds],
        )
      ).rows[0]!.n,
    );
  const recorded = async () =>
    Number(
      (
        await admin.query<{ n: string }>(
          `SELECT count(*) AS n FROM runledger.workflow_steps WHERE workflow_run_id = ANY($1::uuid[]) AND execution_kind = 'FUNCTION'`,
          [runIds],
        )
      ).rows[0]!.n,
    );
  const terminate = async () =>
    Number(
      (
        await admin.query<{ n: string }>(
          'SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
          [APP],
        )
      ).rows[0]!.n,
    );

  // Each run's approve signal, in random order over the first half of the fault window: some before the run
  // reaches its wait (kept in the mailbox), some while it waits (woken at once), all while workers are killed.
  const approvals = (async () => {
    const order = [...runIds].sort(() => Math.random() - 0.5);
    const gapMs = options.faultWindowMs / 2 / Math.max(1, order.length);
    for (const runId of order) {
      await sendApproval(options.db, runId);
      await pause(gapMs);
    }
  })();
  approvals.catch(() => undefined); // awaited below; a failure is reported there

  const alive = new Set<ChildProcess>();
  let kills = 0;
  let next = 1;
  const terminations = { rounds: 0, backends: 0 };
  try {
    const faultsEnd = Date.now() + options.faultWindowMs;
    const lane = async () => {
      // A process takes seconds to boot (tsx, at load): the next one boots while this one lives, so the
      // faults land on workers that are working, not on ones still starting.
      let upcoming = spawnWorker(options.url, `fncrash-${next++}`, alive);
      while (Date.now() < faultsEnd) {
        const child: ChildProcess = await upcoming;
        upcoming = spawnWorker(options.url, `fncrash-${next++}`, alive);
        const dies = Date.now() + between(options.lifeMs);
        // Half-way through its life the connections of every worker are cut.
        await pause(Math.max(0, (dies - Date.now()) / 2));
        const cut = await terminate();
        if (cut > 0) {
          terminations.rounds += 1;
          terminations.backends += cut;
        }
        await pause(Math.max(0, dies - Date.now()));
        await stop(child, 'SIGKILL');
        alive.delete(child);
        kills += 1;
        log(
          `killed a worker (${kills} kills, ${terminations.rounds} termination rounds); ${await unfinished()} runs unfinished, ${await recorded()} steps recorded`,
        );
      }
      // The one booting at the window's end drains with the survivor.
      await upcoming.catch(() => undefined);
    };
    await Promise.all(Array.from({ length: options.workers ?? 2 }, lane));
    await approvals;
    const finishedInWindow = runs - (await unfinished());
    await spawnWorker(options.url, 'fncrash-survivor', alive);
    const until = Date.now() + (options.drainTimeoutMs ?? 120_000);
    for (let left = await unfinished(); left > 0; left = await unfinished()) {
      if (Date.now() > until) throw new Error(`${left} of ${runs} function runs unfinished after the drain`);
      await pause(100);
    }
    const wallMs = performance.now() - started;
    await Promise.all([...alive].map((child) => stop(child, 'SIGTERM')));
    alive.clear();
    const findings = await verifyFunctionProof(admin, { faults: kills + terminations.rounds, runIds });
    return { ...findings, kills, terminations, finishedInWindow, wallMs };
  } finally {
    await Promise.all([...alive].map((child) => stop(child, 'SIGKILL')));
  }
}
