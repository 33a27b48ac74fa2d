// Probe: durable functions under crashes (issue 37). RUNS functions of test/harness/function-proof.ts (5 steps,
// 2 transactional, a sleep) are started at once; for WINDOW_MS two lanes of worker processes run them, each
// process SIGKILLed after LIFE_MS (its successor booting meanwhile), every worker's connections terminated
// half-way through each life; then the workers left drain and the invariants are read from the database
// (test/harness/function-crash.ts). Exits 1 on a violation.
// Usage: npx tsx bench/probes/function-crash.ts   (env: PROBE_SERVER_URL, RUNS (default 300), WINDOW_MS
// (default 90000), LIFE_MS (default "3000-8000"), SLEEP_MS (default "500-3000"))
import pg from 'pg';
import { createPrismaClient } from '../../src/client/connect.js';
import { migrate } from '../../src/index.js';
import { runFunctionCrashProbe } from '../../test/harness/function-crash.js';
import { percentile } from '../stats.js';

const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const database = `fncrash_probe_${process.pid}`;
const range = (value: string | undefined, fallback: [number, number]): [number, number] => {
  const [min, max] = (value ?? '').split('-').map(Number);
  return min !== undefined && max !== undefined && Number.isFinite(min) && Number.isFinite(max) ? [min, max] : fallback;
};
const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = `${base}${database}`;
let failed = false;
try {
  await migrate({ connectionString: url });
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => undefined);
  const db = createPrismaClient(url, { max: 4 });
  const report = await runFunctionCrashProbe({
    url,
    admin: pool,
    db,
    runs: Number(process.env.RUNS ?? 300),
    sleepMs: range(process.env.SLEEP_MS, [500, 3_000]),
    faultWindowMs: Number(process.env.WINDOW_MS ?? 90_000),
    lifeMs: range(process.env.LIFE_MS, [3_000, 8_000]),
    log: (line) => console.log(`[probe] ${line}`),
  });
  const lateness = report.latenessMs;
  console.log(
    [
      `runs ${report.runs}, SUCCEEDED ${report.succeeded} (${report.finishedInWindow} of them while the faults went on), wall ${(report.wallMs / 1000).toFixed(1)} s`,
      `faults: ${report.kills} SIGKILLs, ${report.terminations.rounds} termination rounds (${report.terminations.backends} backends)`,
      `plain steps: ${report.plain.steps}, executions ${report.plain.executions}, re-run ${report.plain.rerunSteps} (${Object.entries(report.plain.rerunByStep)
        .map(([step, n]) => `${step} ${n}`)
        .join(', ')}), most runs of one step ${report.plain.maxRuns}`,
      `host effects: ${report.host.rows} rows, ${report.host.wrong} (run, step) pairs not exactly once`,
      `wake lateness vs the recorded wake time (ms): p50 ${percentile(lateness, 50).toFixed(0)}, p95 ${percentile(lateness, 95).toFixed(0)}, p99 ${percentile(lateness, 99).toFixed(0)}, max ${Math.max(...lateness).toFixed(0)}`,
      `violations: ${report.violations.length}`,
      ...report.violations.map((v) => `  - ${v}`),
    ].join('\n'),
  );
  failed = report.violations.length > 0;
  await db.$disconnect();
  await pool.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
process.exit(failed ? 1 : 0);
