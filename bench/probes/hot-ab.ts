// Probe: the drain's statements on two databases, interleaved round by round: the current schema and the
// HOT-lifecycle candidate (bench/probes/hot-candidate.sql). The same claimJobs / completeJobs SQL the library
// builds, sent on one pg connection per database (typed claim of PROBE_LIMIT 250 with markRunning, then the
// completion of those leases); on the candidate the claim's `status = 'PENDING'` gains `claimable AND`, so it
// scans the candidate's claim index. Prints each statement's wall time per job (localhost: server time plus
// a round trip per statement) and the ratio candidate / current per round.
// Usage: PROBE_A=<current db url> PROBE_B=<candidate db url> [PROBE_JOBS=20000] [PROBE_ROUNDS=3]
//   npx tsx --tsconfig tsconfig.json bench/probes/hot-ab.ts
import pg from 'pg';
import { enqueueJobs, poolDb } from '../../src/index.js';
import { claimJobsStatement } from '../../src/queue/statements/claim-jobs.js';
import { completeJobsStatement } from '../../src/queue/statements/complete-jobs.js';

const N = Number(process.env.PROBE_JOBS ?? 20_000);
const LIMIT = Number(process.env.PROBE_LIMIT ?? 250);
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 3);
const targets = [
  { name: 'current', url: process.env.PROBE_A, candidate: false },
  { name: 'candidate', url: process.env.PROBE_B, candidate: true },
];

async function drain(url: string, candidate: boolean): Promise<{ claim: number; complete: number; n: number }> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const db = poolDb(pool);
  await pool.query('TRUNCATE runledger.job_queue CASCADE');
  if (candidate) await pool.query('TRUNCATE runledger.job_leases, runledger.job_counts');
  await pool.query('VACUUM ANALYZE runledger.job_queue');
  for (let i = 0; i < N; i += 1000)
    await enqueueJobs(
      db,
      Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({ jobType: 'probe.drain', payload: { n: i + k } })),
    );
  // Statistics of the backlog on both (the candidate's generated column has none until analyzed).
  await pool.query('ANALYZE runledger.job_queue');
  const claimSql = claimJobsStatement({ workerId: 'probe', jobTypes: ['probe.drain'], limit: LIMIT, leaseSeconds: 60, markRunning: true, fairAfter: '' });
  const claimText = candidate ? claimSql.text.replace("jq.status = 'PENDING'", "jq.claimable AND jq.status = 'PENDING'") : claimSql.text;
  let claim = 0;
  let complete = 0;
  let n = 0;
  for (;;) {
    const a = performance.now();
    const result = await pool.query<{ id: string | null; run_number: number; attempt: number; lease_owner: string }>(claimText, claimSql.values);
    // The claim's one row with a NULL id, when it got nothing, carries only the fairness cursor.
    const rows = result.rows.filter((r): r is typeof r & { id: string } => r.id !== null);
    const b = performance.now();
    claim += b - a;
    if (rows.length === 0) break;
    const done = completeJobsStatement(
      rows.map((r) => ({ lease: { jobId: r.id, runNumber: r.run_number, attempt: r.attempt, workerId: r.lease_owner }, output: null })),
      true,
    );
    await pool.query(done.text, done.values);
    complete += performance.now() - b;
    n += rows.length;
  }
  await pool.end();
  return { claim, complete, n };
}

const us = (ms: number, n: number) => ((ms * 1000) / n).toFixed(1);
for (let round = 1; round <= ROUNDS; round += 1) {
  const out: Record<string, { claim: number; complete: number; n: number }> = {};
  for (const t of round % 2 ? targets : [...targets].reverse()) {
    if (!t.url) throw new Error('PROBE_A and PROBE_B: migrated database urls');
    out[t.name] = await drain(t.url, t.candidate);
  }
  const a = out.current!;
  const b = out.candidate!;
  console.log(
    `round ${round}: per job current claim ${us(a.claim, a.n)} us, completion ${us(a.complete, a.n)} us; ` +
      `candidate claim ${us(b.claim, b.n)} us, completion ${us(b.complete, b.n)} us; ` +
      `ratio claim ${(b.claim / b.n / (a.claim / a.n)).toFixed(2)}, completion ${(b.complete / b.n / (a.complete / a.n)).toFixed(2)}, ` +
      `both ${((b.claim + b.complete) / b.n / ((a.claim + a.complete) / a.n)).toFixed(2)}`,
  );
}
