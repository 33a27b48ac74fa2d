/**
 * `npx tsx scripts/integrity-explain.ts [--runs 150000] [--direct 400000] [--functions 50000]`:
 * is the integrity checker cheap enough for a production database? Loads a
 * scratch database with a million jobs (150,000 four-step workflow runs, so
 * 600,000 workflow jobs and steps, plus 400,000 direct jobs and 10,000 replays
 * of them, one event each, plus 50,000 durable function runs, each a body job
 * and five recorded FUNCTION steps),
 * then runs verifyIntegrity with every statement of its first pages wrapped
 * in EXPLAIN (ANALYZE, BUFFERS) once (on its second page), prints each
 * statement's scans and time, and times the whole check. Fails if a statement scans a large table
 * sequentially. Too slow for the test suite; run it by hand.
 *
 * Server: TEST_DATABASE_URL / DATABASE_URL, else embedded PostgreSQL.
 */
import pg from 'pg';
import { createPrismaClient } from '../src/client/connect.js';
import type { Db, Tx } from '../src/client/types.js';
import { migrate, verifyIntegrity } from '../src/index.js';
import { startPostgresServer } from '../src/testing/index.js';
import { databaseUrl, uniqueDatabaseName } from '../src/testing/test-database.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const RUNS = arg('--runs', 150_000);
const DIRECT = arg('--direct', 400_000);
const FUNCTIONS = arg('--functions', 50_000);
const say = (line: string) => process.stdout.write(`${line}\n`);

async function load(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    // Bulk load: no per-row trigger work for the deferred link checks (the data is consistent by construction).
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query(
      `
      CREATE TEMP TABLE seed ON COMMIT DROP AS
      SELECT r AS n, gen_random_uuid() AS run_id,
             ARRAY[gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid()] AS step_ids,
             ARRAY[gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid()] AS job_ids
        FROM generate_series(1, $1::int) r`,
      [RUNS],
    );
    await client.query(`
      INSERT INTO runledger.workflow_runs (id, workflow_type, status, finished_at, result, result_step_key)
      SELECT run_id, 'bench.chain', 'SUCCEEDED', now(), '{"ok":true}', 'd' FROM seed`);
    await client.query(`
      INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, job_type, payload, status, job_id,
                                            released_at, finished_at, dependency_count_total, output)
      SELECT s.step_ids[k], s.run_id, (ARRAY['a','b','c','d'])[k], 'JOB', 'bench.step', '{}', 'SUCCEEDED', s.job_ids[k],
             now(), now(), CASE WHEN k = 1 THEN 0 ELSE 1 END, CASE WHEN k = 4 THEN '{"ok":true}'::jsonb ELSE '{}'::jsonb END
        FROM seed s CROSS JOIN generate_series(1, 4) k`);
    await client.query(`
      INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
      SELECT s.step_ids[k - 1], s.step_ids[k], s.run_id, 'ON_SUCCESS' FROM seed s CROSS JOIN generate_series(2, 4) k`);
    await client.query(`
      INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, finished_at, output, workflow_step_id)
      SELECT s.job_ids[k], 'bench.step', '{}', 'SUCCEEDED', 1, now(), CASE WHEN k = 4 THEN '{"ok":true}'::jsonb ELSE '{}'::jsonb END, s.step_ids[k]
        FROM seed s CROSS JOIN generate_series(1, 4) k`);
    // Durable function runs: the `$function` body step and its job, then five recorded FUNCTION steps (calls 0..4).
    await client.query(
      `
      CREATE TEMP TABLE fn_seed ON COMMIT DROP AS
      SELECT gen_random_uuid() AS run_id, gen_random_uuid() AS body_id, gen_random_uuid() AS job_id FROM generate_series(1, $1::int)`,
      [FUNCTIONS],
    );
    await client.query(`
      INSERT INTO runledger.workflow_runs (id, workflow_type, status, finished_at, result, result_step_key)
      SELECT run_id, 'bench.function', 'SUCCEEDED', now(), '5', '$function' FROM fn_seed`);
    await client.query(`
      INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, job_type, payload, status, job_id,
                                            released_at, finished_at, output, allow_continuation)
      SELECT body_id, run_id, '$function', 'JOB', 'bench.function', '{}', 'SUCCEEDED', job_id, now(), now(), '5', true FROM fn_seed`);
    await client.query(`
      INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, finished_at, output, workflow_step_id)
      SELECT job_id, 'bench.function', '{}', 'SUCCEEDED', 1, now(), '5', body_id FROM fn_seed`);
    await client.query(`
      INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, status, released_at, started_at, finished_at,
                                            output, call_index)
      SELECT gen_random_uuid(), f.run_id, 'step' || k, 'FUNCTION', 'SUCCEEDED', now(), now(), now(), to_jsonb(k), k
        FROM fn_seed f CROSS JOIN generate_series(0, 4) k`);
    await client.query(
      `
      INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, finished_at, output)
      SELECT gen_random_uuid(), 'bench.direct', '{}', 'SUCCEEDED', 1, now(), '"done"' FROM generate_series(1, $1::int)`,
      [DIRECT],
    );
    await client.query(`
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt)
      SELECT gen_random_uuid(), id, 'ENQUEUED', 1, 0 FROM runledger.job_queue`);
    // Replays of 1 in 40 direct jobs: the replay job (direct), its ENQUEUED event naming the source, the lineage row.
    await client.query(
      `
      CREATE TEMP TABLE replays ON COMMIT DROP AS
      SELECT id AS source_id, gen_random_uuid() AS replay_id FROM runledger.job_queue
       WHERE job_type = 'bench.direct' ORDER BY id LIMIT $1::int`,
      [Math.floor(DIRECT / 40)],
    );
    await client.query(`
      INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, finished_at, output)
      SELECT replay_id, 'bench.direct', '{}', 'SUCCEEDED', 1, now(), '"again"' FROM replays`);
    await client.query(`
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT gen_random_uuid(), replay_id, 'ENQUEUED', 1, 0,
             jsonb_build_object('replayedFromJobId', source_id, 'replayedFromRunNumber', 1, 'replayRequestKey', 'k', 'reason', 'r')
        FROM replays`);
    await client.query(`
      INSERT INTO runledger.job_replays (source_job_id, source_run_number, replay_request_key, replay_job_id, reason)
      SELECT source_id, 1, 'k', replay_id, 'r' FROM replays`);
    await client.query('COMMIT');
    await client.query('VACUUM ANALYZE');
  } finally {
    await client.end();
  }
}

interface Explained {
  statement: string;
  scans: string[];
  ms: number;
}

/** A Db whose statements, on their second use, are first run under EXPLAIN ANALYZE, then for real. */
function explainingDb(db: ReturnType<typeof createPrismaClient>, plans: Explained[]): Db {
  const uses = new Map<string, number>();
  const wrap = (tx: Tx): Tx => ({
    $executeRaw: (strings: TemplateStringsArray, ...values: unknown[]) => tx.$executeRaw(strings, ...values),
    async $queryRaw<T>(strings: TemplateStringsArray, ...values: unknown[]): Promise<T> {
      const key = strings.join('$');
      uses.set(key, (uses.get(key) ?? 0) + 1);
      if (uses.get(key) === 2 && !/^\s*SET /.test(strings[0]!)) {
        const prefixed = [`EXPLAIN (ANALYZE, BUFFERS) ${strings[0]}`, ...strings.slice(1)];
        const template = Object.assign([...prefixed], { raw: [...prefixed] }) as unknown as TemplateStringsArray;
        const rows = await tx.$queryRaw<{ 'QUERY PLAN': string }[]>(template, ...values);
        const lines = rows.map((row) => row['QUERY PLAN']);
        const statement = strings.join('$').replace(/\s+/g, ' ').trim().slice(0, 90);
        plans.push({
          statement,
          scans: lines
            .filter((l) => /Scan/.test(l))
            .map((l) =>
              l
                .trim()
                .replace(/\s+\(cost=[^)]*\)/, '')
                .replace(/->\s*/, ''),
            ),
          ms: Number(/Execution Time: ([\d.]+)/.exec(lines.join('\n'))?.[1] ?? 'NaN'),
        });
      }
      return tx.$queryRaw<T>(strings, ...values);
    },
  });
  return {
    $queryRaw: db.$queryRaw.bind(db),
    $executeRaw: db.$executeRaw.bind(db),
    $connect: db.$connect.bind(db),
    $transaction: (fn: (tx: Tx) => Promise<unknown>, options?: unknown) => db.$transaction((tx) => fn(wrap(tx as unknown as Tx)), options as never),
  } as unknown as Db;
}

async function main(): Promise<number> {
  const server = await startPostgresServer({ containers: false });
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const name = uniqueDatabaseName('runledger_integrity_explain');
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = databaseUrl(server.url, name);
  const prisma = createPrismaClient(url, { max: 2 });
  try {
    await migrate({ connectionString: url });
    let t = Date.now();
    await load(url);
    const { rows } = await admin.query<{ version: string }>('SELECT version()');
    say(
      `${rows[0]!.version.split(',')[0]}; loaded ${RUNS} runs (${RUNS * 4} steps and workflow jobs) + ${FUNCTIONS} function runs (${FUNCTIONS * 5} recorded steps) + ${DIRECT} direct jobs + ${Math.floor(DIRECT / 40)} replays in ${((Date.now() - t) / 1000).toFixed(0)} s`,
    );

    // One full check; each distinct statement is run under EXPLAIN ANALYZE on its second use (a page past
    // the first, so the keyset bound is a real uuid), then plainly.
    const plans: Explained[] = [];
    const db = explainingDb(prisma, plans);
    t = Date.now();
    const full = await verifyIntegrity(db, { pageSize: 1_000 });
    const seconds = (Date.now() - t) / 1000;
    let seq = 0;
    for (const plan of plans) {
      say(`\n${plan.ms.toFixed(1).padStart(8)} ms  ${plan.statement}`);
      for (const scan of plan.scans) {
        say(`             ${scan}`);
        if (/Seq Scan on (job_queue|workflow_steps|workflow_runs|job_events|workflow_step_dependencies|job_replays)\b/.test(scan)) seq += 1;
      }
    }
    say(
      `\nfull check (pageSize 1000): ${full.checked.runs} runs and ${full.checked.jobs} jobs in ${seconds.toFixed(1)} s, ${full.violations.length} violations; sequential scans of runledger tables in the plans: ${seq}`,
    );
    return seq === 0 && full.clean ? 0 : 1;
  } finally {
    await prisma.$disconnect();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
    await server.stop();
  }
}

process.exitCode = await main();
