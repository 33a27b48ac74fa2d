// Probe: what one drained job writes, per phase (enqueue, claim, completion), read from the WAL: heap
// UPDATE vs HOT_UPDATE records of each table and btree entries of each
// index (INSERT_LEAF, INSERT_POST, and SPLIT_L / SPLIT_R, which carry the entry that split the page),
// filtered to this database's relations, so other databases' traffic on the shared server does not
// count. Load-independent (pg_walinspect, PostgreSQL 15+; the probe creates the extension in the target
// database). Also prints job_queue's pg_stat_user_tables delta (n_tup_upd, n_tup_hot_upd) for the drain and,
// when pg_stat_statements is loaded, nothing else: time is left to farm-bench.
// The drain is a hand loop of claimJobs (typed, markRunning, PROBE_LIMIT 250) + completeJobs through poolDb on
// one connection, the statements createWorker sends.
// PROBE_SHAPE=chain: PROBE_JOBS / 3 workflow runs A -> B -> C instead of direct jobs (per step).
// Usage: PROBE_URL=<a migrated database> [PROBE_JOBS=20000] [PROBE_LIMIT=250] [PROBE_KEYED=0] [PROBE_SHAPE=chain]
//   npx tsx --tsconfig tsconfig.json bench/probes/index-entries.ts
import pg from 'pg';
import { claimJobs, completeJobs, enqueueJobs, enqueueWorkflowRuns, poolDb, workflow } from '../../src/index.js';

const url = process.env.PROBE_URL;
if (!url) throw new Error('PROBE_URL: a migrated database');
const N = Number(process.env.PROBE_JOBS ?? 20_000);
const LIMIT = Number(process.env.PROBE_LIMIT ?? 250);
// Every job with an execution resource key of its own (the resource indexes' cost); 0: none.
const KEYED = process.env.PROBE_KEYED === '1';
const CHAIN = process.env.PROBE_SHAPE === 'chain';
const TYPES = CHAIN ? ['probe.a', 'probe.b', 'probe.c'] : ['probe.drain'];
const pool = new pg.Pool({ connectionString: url, max: 1 });
const db = poolDb(pool);

type Phase = 'enqueue' | 'claim' | 'complete';
const counts: Record<Phase, Map<string, number>> = { enqueue: new Map(), claim: new Map(), complete: new Map() };
const lsn = async (): Promise<string> => (await pool.query<{ l: string }>('SELECT pg_current_wal_flush_lsn()::text AS l')).rows[0]!.l;
// Relations of this database by relfilenode (block_ref reads "rel 1663/<db>/<relfilenode>"), read after
// the TRUNCATE below gives job_queue new files.
let prefix = '';
let byNode = new Map<string, { name: string; kind: string }>();
async function relations(): Promise<void> {
  const { rows } = await pool.query<{ node: string; name: string; kind: string }>(
    `SELECT c.relfilenode::text AS node, c.relname AS name, c.relkind::text AS kind
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'runledger' AND c.relkind IN ('r', 'i') AND c.relfilenode <> 0`,
  );
  byNode = new Map(rows.map((r) => [r.node, r]));
  const { rows: d } = await pool.query<{ oid: string }>(`SELECT oid::text FROM pg_database WHERE datname = current_database()`);
  prefix = `/${d[0]!.oid}/`;
}
// The WAL of one call, read right after it (other databases' traffic recycles segments quickly), between
// flush positions: the call committed (synchronous_commit on), so its records are flushed.
async function timed<T>(phase: Phase, f: () => Promise<T>): Promise<T> {
  const a = await lsn();
  const out = await f();
  const b = await lsn();
  if (a === b) return out;
  const { rows } = await pool.query<{ rt: string; ref: string | null }>(
    `SELECT record_type AS rt, block_ref AS ref FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
      WHERE resource_manager IN ('Heap', 'Btree') AND block_ref LIKE '%' || $3 || '%'`,
    [a, b, prefix],
  );
  for (const r of rows) {
    const m = /rel \d+\/\d+\/(\d+)/.exec(r.ref ?? '');
    const rel = m ? byNode.get(m[1]!) : undefined;
    if (!rel) continue;
    const t = r.rt.replace(/[+ ].*$/, '');
    let key: string | undefined;
    if (rel.kind === 'i' && ['INSERT_LEAF', 'INSERT_POST', 'SPLIT_L', 'SPLIT_R'].includes(t)) key = `entry ${rel.name}`;
    else if (rel.kind === 'r' && ['INSERT', 'UPDATE', 'HOT_UPDATE', 'DELETE'].includes(t)) key = `${t} ${rel.name}`;
    if (key) counts[phase].set(key, (counts[phase].get(key) ?? 0) + 1);
  }
  return out;
}

await pool.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
await pool.query(CHAIN ? 'TRUNCATE runledger.job_queue, runledger.workflow_runs CASCADE' : 'TRUNCATE runledger.job_queue CASCADE');
await pool.query(CHAIN ? 'VACUUM ANALYZE' : 'VACUUM ANALYZE runledger.job_queue');
await relations();
const chainRun = (n: number) =>
  workflow('probe.chain', { n })
    .job('a', 'probe.a', { n })
    .job('b', 'probe.b', { n })
    .afterSuccess('b', ['a'])
    .job('c', 'probe.c', { n })
    .afterSuccess('c', ['b'])
    .build();
if (CHAIN)
  for (let i = 0; i < N / 3; i += 100)
    await timed('enqueue', () =>
      enqueueWorkflowRuns(
        db,
        Array.from({ length: Math.min(100, N / 3 - i) }, (_, k) => chainRun(i + k)),
      ),
    );
else
  for (let i = 0; i < N; i += 1000)
    await timed('enqueue', () =>
      enqueueJobs(
        db,
        Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({
          jobType: 'probe.drain',
          payload: { n: i + k },
          ...(KEYED ? { resourceKey: `r${i + k}` } : {}),
        })),
      ),
    );
const stat = async () =>
  (
    await pool.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = 'runledger.job_queue'::regclass`,
    )
  ).rows[0]!;
await pool.query('SELECT pg_stat_force_next_flush()');
const before = await stat();
let drained = 0;
for (;;) {
  const jobs = await timed('claim', () => claimJobs(db, { workerId: 'probe', jobTypes: TYPES, limit: LIMIT, leaseSeconds: 60, markRunning: true }));
  if (jobs.length === 0) break;
  await timed('complete', () =>
    completeJobs(
      db,
      jobs.map((job) => ({ ...job, output: null })),
    ),
  );
  drained += jobs.length;
}
await pool.query('SELECT pg_stat_force_next_flush()');
const after = await stat();

const units: Record<Phase, number> = { enqueue: N, claim: drained, complete: drained };
console.log(`drained ${drained} of ${N} jobs (claim limit ${LIMIT}${KEYED ? ', every job keyed' : ''}); per job:`);
for (const phase of Object.keys(counts) as Phase[]) {
  const m = counts[phase];
  const entries = [...m].filter(([k]) => k.startsWith('entry ')).reduce((s, [, v]) => s + v, 0);
  console.log(`  ${phase}: ${(entries / units[phase]).toFixed(2)} index entries`);
  for (const [k, v] of [...m].sort()) console.log(`    ${k}: ${(v / units[phase]).toFixed(2)}`);
}
const upd = Number(after.upd) - Number(before.upd);
const hot = Number(after.hot) - Number(before.hot);
console.log(`  job_queue in the drain (pg_stat_user_tables): n_tup_upd ${upd}, n_tup_hot_upd ${hot} (${((100 * hot) / Math.max(upd, 1)).toFixed(1)}% HOT)`);
await pool.end();
