/**
 * Wide fan-out (runledger only): one workflow run whose root job has W
 * dependents; the timed part is the one completeJobs call for the
 * claimed root, which must release all W. Reported per width: wall time,
 * statements the client sent (BEGIN/COMMIT included, counted in the pg.Pool
 * under Prisma; see runledger-client.ts), commits, rows written (inserted,
 * updated, deleted: pg_stat_user_tables deltas, read once the backends have
 * exited and published their counters; bench/tuples.ts) and rows
 * locked (a second pass runs the same completion inside an interactive
 * transaction and, before it commits, counts the rows its transaction holds
 * with the pgrowlocks extension; rows it inserted are not locks and not
 * counted). The target: the statement count does not grow with W.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { ClaimedJob } from '../../src/index.js';
import { runledger } from '../runledger-package.js';
import { countersAfter, countersBefore, rowsWritten, sumTuples, tupleDelta } from '../tuples.js';
import { resetServerStatements, serverStatementCount } from '../pgss.js';
import { spread, type Spread } from '../stats.js';
import { withCountingPrisma } from '../systems/runledger-client.js';
import { wideRun } from '../systems/runledger-workflows.js';
import type { BenchSystem } from '../systems/types.js';
import type { BenchContext, TableResult, Workload } from './types.js';

const { claimJobs, completeJobs, enqueueWorkflowRun, isRunledgerError } = runledger;

/** runledger's per-run step limit (MAX_WORKFLOW_STEPS in src/workflow/run-definition.ts), when the requested width exceeds it. */
const STEP_LIMIT = 10_000;
const TABLES = ['job_queue', 'job_events', 'workflow_runs', 'workflow_steps', 'workflow_step_dependencies'];

interface WidthMeasure {
  requested: number;
  width: number;
  wallMs: Spread;
  statements: Spread;
  /** Statements pg_stat_statements saw (top level, utility included), when the server preloads it. */
  serverStatements: Spread | null;
  /** Of those, foreign-key checks (one per referencing row written). */
  fkChecks: Spread | null;
  commits: Spread;
  rowsWritten: Spread;
  rowsLocked: Record<string, number> | null;
  rowsLockedTotal: number | null;
}

/** Enqueues the run and claims its root; returns the lease, or null when the width is over the step limit. */
async function seedAndClaim(url: string, width: number): Promise<ClaimedJob | null> {
  return withCountingPrisma(url, 2, async ({ prisma }) => {
    try {
      await enqueueWorkflowRun(prisma, wideRun(width));
    } catch (error) {
      if (isRunledgerError(error) && error.category === 'validation' && width + 1 > STEP_LIMIT) return null;
      throw error;
    }
    const [root] = await claimJobs(prisma, { workerId: 'bench-wide', jobTypes: ['wide_root'], limit: 1, leaseSeconds: 600, markRunning: true });
    if (!root) throw new Error('wide fan-out: the root job was not claimable');
    return root;
  });
}

async function rowsLockedPass(context: BenchContext, system: BenchSystem, width: number): Promise<Record<string, number> | null> {
  return context.withDatabase(system, async (url) => {
    const root = await seedAndClaim(url, width);
    if (!root) return null;
    const observer = new pg.Client({ connectionString: url });
    await observer.connect();
    try {
      try {
        await observer.query('CREATE EXTENSION IF NOT EXISTS pgrowlocks');
      } catch (error) {
        context.log(`  pgrowlocks unavailable (${(error as Error).message}); rows locked not reported`);
        return null;
      }
      return await withCountingPrisma(url, 2, async ({ prisma }) => {
        const locked: Record<string, number> = {};
        await prisma.$transaction(
          async (tx) => {
            await completeJobs(tx, [root]);
            // Still inside the transaction: its row locks are held until it commits.
            for (const table of TABLES) {
              const { rows } = await observer.query<{ n: string }>(`SELECT count(*) AS n FROM pgrowlocks('runledger.${table}')`);
              locked[table] = Number(rows[0]?.n ?? 0);
            }
          },
          { timeout: 300_000, maxWait: 10_000 },
        );
        return locked;
      });
    } finally {
      await observer.end();
    }
  });
}

export function wideFanOutWorkload(widths: number[], repeats: number): Workload {
  return {
    key: 'wide_fan_out',
    async run(context, systems): Promise<TableResult> {
      const system = systems.find((s) => s.key === 'runledger');
      const measures: WidthMeasure[] = [];
      const notes: string[] = [];
      if (system) {
        for (const requested of widths) {
          let width = requested;
          const reps: { wallMs: number; statements: number; serverStatements: number | null; fkChecks: number | null; commits: number; rowsWritten: number }[] =
            [];
          for (let rep = 0; rep < repeats; rep += 1) {
            context.log(`wide_fan_out: ${width} dependents, run ${rep + 1}/${repeats}`);
            const measured = await context.withDatabase(system, async (url, database) => {
              let root = await seedAndClaim(url, width);
              if (!root) {
                notes.push(`${requested} dependents exceed runledger's ${STEP_LIMIT}-step run limit; ran ${STEP_LIMIT - 1}`);
                width = STEP_LIMIT - 1;
                root = await seedAndClaim(url, width);
                if (!root) throw new Error('wide fan-out: could not enqueue the capped width');
              }
              const serverCounting = await resetServerStatements(url);
              // Settled readings (bench/tuples.ts): the seeding's and these connections' counters fall before the timed call.
              const before = await countersBefore(context.admin, url, database);
              const result = await withCountingPrisma(url, 2, async ({ prisma, statements }) => {
                const sent = statements();
                const started = performance.now();
                const outcomes = await completeJobs(prisma, [root]);
                const wallMs = performance.now() - started;
                if (outcomes[0]?.outcome !== 'succeeded') throw new Error(`wide fan-out: completion refused (${outcomes[0]?.outcome})`);
                return { wallMs, statements: statements() - sent };
              });
              const after = await countersAfter(context.admin, url, database);
              // The harness's SELECT 1 on connect is the one statement (and commit) to subtract.
              const server = serverCounting ? await serverStatementCount(url) : null;
              const written = rowsWritten(sumTuples(tupleDelta(before.tuples, after.tuples)));
              return {
                ...result,
                serverStatements: server ? server.total - 1 : null,
                fkChecks: server?.fkChecks ?? null,
                commits: after.commits - before.commits - 1,
                rowsWritten: written,
              };
            });
            context.log(
              `  ${measured.wallMs.toFixed(1)} ms, ${measured.statements} statements${measured.serverStatements === null ? '' : ` (server: ${measured.serverStatements}, ${measured.fkChecks} FK checks)`}, ${measured.rowsWritten} rows written`,
            );
            reps.push(measured);
          }
          context.log(`wide_fan_out: ${width} dependents, rows locked (inside a transaction)`);
          const rowsLocked = await rowsLockedPass(context, system, width);
          measures.push({
            requested,
            width,
            wallMs: spread(reps.map((r) => r.wallMs)),
            statements: spread(reps.map((r) => r.statements)),
            serverStatements: reps.every((r) => r.serverStatements !== null) ? spread(reps.map((r) => r.serverStatements!)) : null,
            fkChecks: reps.every((r) => r.fkChecks !== null) ? spread(reps.map((r) => r.fkChecks!)) : null,
            commits: spread(reps.map((r) => r.commits)),
            rowsWritten: spread(reps.map((r) => r.rowsWritten)),
            rowsLocked,
            rowsLockedTotal: rowsLocked ? Object.values(rowsLocked).reduce((a, b) => a + b, 0) : null,
          });
        }
      }
      const statementCounts = new Set(measures.map((m) => m.statements.median));
      notes.push(
        statementCounts.size <= 1
          ? 'statement count is the same for every width (target met)'
          : `statement count grows with the width: ${measures.map((m) => `${m.width}: ${m.statements.median}`).join(', ')} (target: equal)`,
      );
      return {
        kind: 'table',
        key: 'wide_fan_out',
        title: 'wide fan-out: completing one prerequisite with W dependents (runledger hand loop client)',
        size: `W = ${measures.map((m) => m.width).join(', ')}; ${repeats} run(s) each`,
        notes,
        headers: [
          'dependents',
          'wall ms (median, min-max)',
          'statements (client)',
          'server statements (pg_stat_statements; of which FK checks)',
          'commits',
          'rows written',
          'rows locked (jobs/steps/deps/runs/events)',
        ],
        rows: measures.map((m) => [
          m.width,
          `${m.wallMs.median.toFixed(1)} (${m.wallMs.min.toFixed(1)}-${m.wallMs.max.toFixed(1)})`,
          m.statements.median,
          m.serverStatements ? `${m.serverStatements.median} (${m.fkChecks?.median ?? 'n/a'})` : 'n/a (needs BENCH_PG_STAT_STATEMENTS=1)',
          m.commits.median,
          m.rowsWritten.median,
          m.rowsLocked
            ? `${m.rowsLockedTotal} (${m.rowsLocked.job_queue}/${m.rowsLocked.workflow_steps}/${m.rowsLocked.workflow_step_dependencies}/${m.rowsLocked.workflow_runs}/${m.rowsLocked.job_events})`
            : 'n/a',
        ]),
        data: measures,
      };
    },
  };
}
