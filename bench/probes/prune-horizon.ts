// Probe: does a transaction in ANOTHER database of the cluster keep a page of job_queue from being pruned?
// Enqueues 100 jobs, claims them (every row gets a new version; page 0 fills), reads one row of page 0 by
// primary key (a read that prunes a full page when it can) and counts page 0's normal line pointers, with and
// without an open transaction holding an xid in OTHER_URL's database. Needs pageinspect in PROBE_URL's database.
// Usage: PROBE_URL=<a migrated database> OTHER_URL=<another database on the same server>
//   npx tsx --tsconfig tsconfig.json bench/probes/prune-horizon.ts
import pg from 'pg';
import { claimJobs, enqueueJobs, poolDb } from '../../src/index.js';

const pool = new pg.Pool({ connectionString: process.env.PROBE_URL, max: 1 });
const other = new pg.Client({ connectionString: process.env.OTHER_URL });
await other.connect();
const db = poolDb(pool);
await pool.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
for (const hold of [true, false, true, false]) {
  await pool.query('TRUNCATE runledger.job_queue CASCADE');
  await enqueueJobs(
    db,
    Array.from({ length: 100 }, (_, k) => ({ jobType: 'probe.drain', payload: { n: k } })),
  );
  const { rows: first } = await pool.query<{ id: string }>(`SELECT id FROM runledger.job_queue WHERE ctid = '(0,1)'`);
  if (hold) {
    await other.query('BEGIN');
    await other.query('SELECT txid_current()');
  }
  await claimJobs(db, { workerId: 'probe', jobTypes: ['probe.drain'], limit: 100, leaseSeconds: 60, markRunning: true });
  // By the id of page 0's first enqueued row: its primary-key entry still points at page 0.
  await pool.query(`SELECT * FROM runledger.job_queue WHERE id = $1`, [first[0]!.id]);
  const { rows } = await pool.query<{ normal: string; lps: string }>(
    `SELECT count(*) FILTER (WHERE lp_flags = 1) AS normal, count(*) AS lps FROM heap_page_items(get_raw_page('runledger.job_queue', 0))`,
  );
  console.log(`transaction open in the other database: ${hold}; page 0: ${rows[0]!.normal} of ${rows[0]!.lps} line pointers hold a tuple`);
  if (hold) await other.query('COMMIT');
}
await other.end();
await pool.end();
