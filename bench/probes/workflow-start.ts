// Probe: what starting a small workflow run costs next to enqueueing one job, on the same client, in the same
// process: statements per call (counted at the driver, BEGIN and COMMIT included), sequential p50 (calls
// interleaved job / run so drift hits both), and ten concurrent callers' rate (rounds interleaved likewise).
// The figures that matter are the ratios (run / job): the machine's load moves both sides.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { preparedStatementName } from '../../src/client/connect.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { countStatements } from '../../test/harness/counting-client.js';
import { migrate, enqueueJob, enqueueWorkflowRun, poolDb, workflow } from '../../src/index.js';
import type { Db } from '../../src/client/types.js';

// Usage: npx tsx bench/probes/workflow-start.ts   (env: PROBE_SERVER_URL, CALLS sequential pairs (default 400),
// ROUNDS concurrent rounds (default 4), PER_ROUND calls per round (default 500), CALLERS (default 10),
// DROP_REDUNDANT_FKS=1 the what-if below)
const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const database = `wfstart_probe_${process.pid}`;
const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = `${base}${database}`;
const CALLS = Number(process.env.CALLS ?? 400);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const PER_ROUND = Number(process.env.PER_ROUND ?? 500);
const CALLERS = Number(process.env.CALLERS ?? 10);

try {
  await migrate({ connectionString: url });
  if (process.env.DROP_REDUNDANT_FKS) {
    // What-if: the two foreign keys another one implies (an edge's run through its steps' composite keys; a
    // step's job through the deferred job <-> step link). Not a change runledger makes: a measured lever.
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`ALTER TABLE runledger.workflow_step_dependencies DROP CONSTRAINT workflow_step_dependencies_workflow_run_id_fkey;
                   ALTER TABLE runledger.workflow_steps DROP CONSTRAINT workflow_steps_job_id_fkey`);
    await c.end();
  }
  const pool = new pg.Pool({ connectionString: url, max: CALLERS });
  const statements = countStatements(pool);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  const clients: [string, Db][] = [
    ['poolDb', poolDb(pool) as Db],
    ['Prisma', prisma as unknown as Db],
  ];
  let n = 0;
  const job = (db: Db) => enqueueJob(db, { jobType: 'probe.job', payload: { n: n++ } });
  const chain = (db: Db) =>
    enqueueWorkflowRun(
      db,
      workflow('probe.chain', { n: n++ })
        .job('a', 'probe.a', { n })
        .job('b', 'probe.b', { n })
        .afterSuccess('b', ['a'])
        .job('c', 'probe.c', { n })
        .afterSuccess('c', ['b'])
        .build(),
    );
  const kinds = { job, chain } as const;
  const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;

  for (const [name, db] of clients) {
    for (const kind of ['job', 'chain'] as const) {
      await kinds[kind](db); // warm: the per-client isolation checks and prepared statements
      const before = statements();
      await kinds[kind](db);
      console.log(`${name} ${kind}: ${statements() - before} statements per call`);
    }
    const times: Record<'job' | 'chain', number[]> = { job: [], chain: [] };
    for (let i = 0; i < CALLS; i++) {
      for (const kind of i % 2 ? (['job', 'chain'] as const) : (['chain', 'job'] as const)) {
        const t = performance.now();
        await kinds[kind](db);
        times[kind].push(performance.now() - t);
      }
    }
    const [j, c] = [p(times.job, 0.5), p(times.chain, 0.5)];
    console.log(`${name} sequential p50: job ${j.toFixed(3)} ms, 3-step chain ${c.toFixed(3)} ms, ratio ${(c / j).toFixed(2)}`);

    const rates: Record<'job' | 'chain', number[]> = { job: [], chain: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of round % 2 ? (['job', 'chain'] as const) : (['chain', 'job'] as const)) {
        let left = PER_ROUND;
        const t = performance.now();
        await Promise.all(
          Array.from({ length: CALLERS }, async () => {
            while (left-- > 0) await kinds[kind](db);
          }),
        );
        rates[kind].push(PER_ROUND / ((performance.now() - t) / 1000));
      }
    }
    const [rj, rc] = [p(rates.job, 0.5), p(rates.chain, 0.5)];
    console.log(`${name} ${CALLERS} callers: ${rj.toFixed(0)} jobs/s, ${rc.toFixed(0)} runs/s, ratio ${(rc / rj).toFixed(2)}`);
  }
  await prisma.$disconnect();
  await pool.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
