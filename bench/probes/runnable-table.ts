// Probe (issue 34, "measure before choosing"): what a small table of runnable jobs beside the ledger would buy
// the drain, against today's layout, with everything else equal. Three claims, each followed by the product's
// completeJobs, in hand loops through poolDb:
//   product  claimJobs (markRunning false) on today's schema: the whole claim statement;
//   minimal  a claim of only what a no-key, no-fairness claim writes (the job row, its attempt fields, its
//            lease row) on today's schema: how much of the product's cost is the statement's other parts;
//   runnable the same minimal claim where the claimable jobs live in `runledger.job_runnable` (id, type,
//            priority, due time; the claim deletes its rows), job_queue has no index on a claim marker
//            (its claimable-partial indexes and claimed_type_idx dropped) and fillfactor 50, so the claim's
//            update of job_queue can be HOT. Its enqueue's extra insert is timed apart.
// A database per layout (scratch, dropped at the end), each seeded with the same jobs, VACUUM ANALYZE before
// each drain; layouts alternate. Reports wall time per job and job_queue's HOT share of updates.
// Not the product: the runnable layout has no fairness, concurrency, rate or resource keys, no retries or
// continuations putting jobs back; it measures the lifecycle's cost only.
// Usage: DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [PROBE_JOBS=20000] [PROBE_LIMIT=50]
//   [PROBE_LOOPS=4] [PROBE_ROUNDS=3] npx tsx --tsconfig tsconfig.json bench/probes/runnable-table.ts
import pg from 'pg';
import { claimJobs, completeJobs, enqueueJobs, migrate, poolDb, type ClaimedJob } from '../../src/index.js';

const server = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const JOBS = Number(process.env.PROBE_JOBS ?? 20_000);
const LIMIT = Number(process.env.PROBE_LIMIT ?? 50);
const LOOPS = Number(process.env.PROBE_LOOPS ?? 4);
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 3);
const TYPE = 'probe.runnable';

type Variant = 'product' | 'minimal' | 'runnable';
type Lease = { id: string; run_number: number; attempt: number };

const SET_LEASED = `status = 'LEASED', attempt = jq.attempt + 1, lease_owner = $3,
       lease_expires_at = now() + interval '60 seconds', heartbeat_at = now(), updated_at = now(),
       attempt_seq = nextval('runledger.job_events_seq_seq'), attempt_worker_id = $3, attempt_started_at = now(),
       attempt_leased_until = now() + interval '60 seconds', attempt_running_seq = NULL, attempt_running_at = NULL,
       attempt_closed_seq = NULL`;
const LEASE_ROWS = `leased AS (
    INSERT INTO runledger.job_leases (expires_at, job_id, resource_key, concurrency_key, concurrency_seat)
    SELECT lease_expires_at, id, resource_key, concurrency_key, NULL FROM claimed)
  SELECT * FROM claimed`;
// What the product's claim returns for a direct job (a handler's input), so both send the client the same.
const RETURNING = `RETURNING jq.id, jq.run_number, jq.attempt, jq.lease_owner, jq.lease_expires_at, jq.job_type, jq.organization_id,
    jq.payload, jq.checkpoint, jq.progress, jq.timeout_seconds, jq.max_attempts, jq.priority, jq.next_run_at, jq.workflow_step_id,
    jq.resource_key, jq.concurrency_key, jq.rate_key, jq.fair_key, jq.trace_context, jq.stage`;

const MINIMAL = `WITH picked AS MATERIALIZED (
    SELECT jq.ctid FROM runledger.job_queue jq
     WHERE jq.claimable AND jq.fair_key IS NULL AND jq.job_type = $1 AND jq.next_run_at <= now()
     ORDER BY jq.priority DESC, jq.next_run_at, jq.id LIMIT $2 FOR UPDATE SKIP LOCKED),
  claimed AS (UPDATE runledger.job_queue jq SET ${SET_LEASED} WHERE jq.ctid = ANY (ARRAY(SELECT ctid FROM picked)) ${RETURNING}),
  ${LEASE_ROWS}`;

const RUNNABLE = `WITH picked AS MATERIALIZED (
    DELETE FROM runledger.job_runnable r WHERE r.id IN (
      SELECT id FROM runledger.job_runnable WHERE job_type = $1 AND next_run_at <= now()
       ORDER BY priority DESC, next_run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
    RETURNING r.id),
  claimed AS (UPDATE runledger.job_queue jq SET ${SET_LEASED} WHERE jq.id IN (SELECT id FROM picked) ${RETURNING}),
  ${LEASE_ROWS}`;

const RUNNABLE_LAYOUT = `
  CREATE TABLE runledger.job_runnable (id uuid PRIMARY KEY, job_type text NOT NULL, priority int NOT NULL, next_run_at timestamptz NOT NULL);
  CREATE INDEX job_runnable_claim_idx ON runledger.job_runnable (job_type, priority DESC, next_run_at, id);
  DROP INDEX runledger.job_queue_claim_by_type_idx, runledger.job_queue_claim_idx, runledger.job_queue_claimed_type_idx,
    runledger.job_queue_concurrency_waiting_idx, runledger.job_queue_fair_by_type_idx, runledger.job_queue_fair_idx,
    runledger.job_queue_rate_waiting_idx, runledger.job_queue_resource_head_idx;
  ALTER TABLE runledger.job_queue SET (fillfactor = 50);`;

async function scratch(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(server);
  u.pathname = `/${name}`;
  await migrate({ connectionString: u.toString() });
  return u.toString();
}

async function drain(pool: pg.Pool, variant: Variant): Promise<{ ms: number; jobs: number }> {
  const db = poolDb(pool);
  const claim = async (worker: string): Promise<Lease[]> => {
    if (variant === 'product') {
      const jobs: ClaimedJob[] = await claimJobs(db, { workerId: worker, jobTypes: [TYPE], limit: LIMIT, leaseSeconds: 60 });
      return jobs.map((j) => ({ id: j.jobId, run_number: j.runNumber, attempt: j.attempt }));
    }
    const text = variant === 'minimal' ? MINIMAL : RUNNABLE;
    return (await pool.query<Lease>({ name: `probe_${variant}`, text, values: [TYPE, LIMIT, worker] })).rows;
  };
  let jobs = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: LOOPS }, async (_, loop) => {
      const worker = `probe-${loop}`;
      for (;;) {
        const leases = await claim(worker);
        if (leases.length === 0) return;
        await completeJobs(
          db,
          leases.map((l) => ({ jobId: l.id, runNumber: Number(l.run_number), attempt: l.attempt, workerId: worker, workflowManaged: false, output: null })),
        );
        jobs += leases.length;
      }
    }),
  );
  return { ms: performance.now() - started, jobs };
}

async function seed(pool: pg.Pool, runnable: boolean): Promise<number> {
  await pool.query('TRUNCATE runledger.job_queue CASCADE');
  if (runnable) await pool.query('TRUNCATE runledger.job_runnable');
  const db = poolDb(pool);
  for (let i = 0; i < JOBS; i += 1000)
    await enqueueJobs(
      db,
      Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({ jobType: TYPE, payload: { n: i + k } })),
      { notify: false },
    );
  let extraMs = 0;
  if (runnable) {
    const started = performance.now();
    await pool.query(`INSERT INTO runledger.job_runnable SELECT id, job_type, priority, next_run_at FROM runledger.job_queue`);
    extraMs = performance.now() - started;
  }
  await pool.query('VACUUM ANALYZE');
  return extraMs;
}

const hot = async (pool: pg.Pool): Promise<{ upd: number; hot: number }> => {
  await pool.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await pool.query<{ upd: string; hot: string }>(
    `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = 'runledger.job_queue'::regclass`,
  );
  return { upd: Number(rows[0]!.upd), hot: Number(rows[0]!.hot) };
};

const urlA = await scratch('probe_runnable_a');
const urlB = await scratch('probe_runnable_b');
const poolA = new pg.Pool({ connectionString: urlA, max: LOOPS + 1 });
const poolB = new pg.Pool({ connectionString: urlB, max: LOOPS + 1 });
try {
  await poolB.query(RUNNABLE_LAYOUT);
  const results = new Map<Variant, number[]>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const variant of ['product', 'minimal', 'runnable'] as Variant[]) {
      const pool = variant === 'runnable' ? poolB : poolA;
      const extraMs = await seed(pool, variant === 'runnable');
      const before = await hot(pool);
      const { ms, jobs } = await drain(pool, variant);
      const after = await hot(pool);
      const perJob = (1000 * ms) / jobs;
      results.set(variant, [...(results.get(variant) ?? []), perJob]);
      const share = (100 * (after.hot - before.hot)) / Math.max(1, after.upd - before.upd);
      const extra = variant === 'runnable' ? `; runnable rows inserted at ${((1000 * extraMs) / JOBS).toFixed(1)} us/job` : '';
      console.log(`round ${round + 1} ${variant}: ${jobs} jobs, ${perJob.toFixed(1)} us/job wall, job_queue updates ${share.toFixed(0)}% HOT${extra}`);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`median us/job (${LOOPS} loops, claims of ${LIMIT}): ${[...results].map(([v, xs]) => `${v} ${median(xs).toFixed(1)}`).join(', ')}`);
} finally {
  await poolA.end();
  await poolB.end();
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS probe_runnable_a');
  await admin.query('DROP DATABASE IF EXISTS probe_runnable_b');
  await admin.end();
}
