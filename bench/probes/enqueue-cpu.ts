// Probe: the Node CPU one enqueue costs the calling process, for `enqueueJob` and a 3-step
// `enqueueWorkflowRun` (process.cpuUsage around N sequential calls).
//   PROBE_MODE=client (default): runledger's own client code only, on a poolDb whose pool answers every
//     statement at once without a server: validation, the batch's JSON, the statement's text and prepared
//     name. Stable on a loaded machine, so before/after can be told apart by a few microseconds.
//   PROBE_MODE=server: through `poolDb` and the Prisma client on one pool against a fresh database (the
//     driver's and Prisma's work and the socket's system time included; on a loaded machine this figure
//     moves with the load more than with the code).
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { preparedStatementName } from '../../src/client/connect.js';
import { PoolDb } from '../../src/client/pool-db.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { migrate, enqueueJob, enqueueWorkflowRun, poolDb, workflow } from '../../src/index.js';
import type { Db } from '../../src/client/types.js';

// Usage: npx tsx --tsconfig tsconfig.json bench/probes/enqueue-cpu.ts
// (env: PROBE_MODE client | server, PROBE_SERVER_URL (server mode; default postgresql://postgres@127.0.0.1:5432/),
// CALLS per kind and client (default 20000), ROUNDS (default 3, the median printed beside each), KINDS
// (default job,chain), NOTIFY=0 enqueues jobs with { notify: false })
const CALLS = Number(process.env.CALLS ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const KINDS = (process.env.KINDS ?? 'job,chain').split(',') as ('job' | 'chain')[];
const notify = process.env.NOTIFY !== '0';

let n = 0;
const kinds = {
  job: (db: Db) => enqueueJob(db, { jobType: 'probe.job', payload: { n: n++ } }, { notify }),
  chain: (db: Db) =>
    enqueueWorkflowRun(
      db,
      workflow('probe.chain', { n: n++ })
        .job('a', 'probe.a', { n })
        .job('b', 'probe.b', { n })
        .afterSuccess('b', ['a'])
        .job('c', 'probe.c', { n })
        .afterSuccess('c', ['b'])
        .build(),
    ),
} as const;

async function measure(clients: [string, Db][]): Promise<void> {
  for (const [name, db] of clients) {
    for (const kind of KINDS) {
      for (let i = 0; i < 1_000; i++) await kinds[kind](db); // warm: JIT, prepared statements, isolation checks
      const cpu: number[] = [];
      const wall: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const started = process.cpuUsage();
        const t = performance.now();
        for (let i = 0; i < CALLS; i++) await kinds[kind](db);
        wall.push(((performance.now() - t) * 1000) / CALLS);
        const used = process.cpuUsage(started);
        cpu.push((used.user + used.system) / CALLS);
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      console.log(
        `${name} ${kind}: ${median(cpu).toFixed(1)} us CPU per call (rounds ${cpu.map((x) => x.toFixed(1)).join(' / ')}), wall ${median(wall).toFixed(0)} us`,
      );
    }
  }
}

/** A pool whose one connection answers every statement at once, as the server would for these calls. */
function answeringPool(): pg.Pool {
  const answer = (config: pg.QueryConfig | string) => {
    if (typeof config === 'string' || !config.values || config.values.length === 0) return { rows: [{ level: 'read committed' }], rowCount: 1 };
    // A workflow start returns the ids of the runs it inserted (its first parameter is the runs' batch);
    // a job insert without keys returns one row with no id and nothing refused.
    const first = config.values[0];
    const runs = typeof first === 'string' && first.includes('"workflow_type"') ? (JSON.parse(first) as { id: string }[]) : undefined;
    return { rows: runs ? runs.map((r) => ({ id: r.id })) : [{ id: null, refused: null }], rowCount: 1 };
  };
  const client = { query: async (config: pg.QueryConfig | string) => answer(config), release() {}, on() {}, removeListener() {} };
  return { connect: async () => client, on() {}, listeners: () => [], removeListener() {} } as unknown as pg.Pool;
}

if ((process.env.PROBE_MODE ?? 'client') === 'client') {
  await measure([['poolDb (no server)', new PoolDb(answeringPool()) as Db]]);
} else {
  const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
  const database = `enqueue_cpu_probe_${process.pid}`;
  const admin = new pg.Client({ connectionString: `${base}postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  try {
    const url = `${base}${database}`;
    await migrate({ connectionString: url });
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
    await measure([
      ['poolDb', poolDb(pool) as Db],
      ['Prisma', prisma as unknown as Db],
    ]);
    await prisma.$disconnect();
    await pool.end();
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
}
