/**
 * The durable function the crash probe and the chaos run drive (issue 37), and
 * the invariants checked from the database afterwards.
 *
 * `fnproof.order`: five steps, a signal and a sleep, each step lingering a little so a
 * kill often lands inside one:
 *   load (plain) -> charge (transactional) -> wait for `approve` -> sleep -> wake (plain) -> ship (transactional)
 *   -> receipt (plain)
 * The driver sends each run's `approve` signal (sendApproval) once, at a moment of its choosing: before the
 * wait opens (kept in the mailbox) or while it waits (woken at once).
 * A plain step writes its side effect with an autocommitted INSERT on a pool of
 * its own (outside the ledger: a re-run shows as a second row); a
 * transactional step writes its host effect through the host's transaction
 * (no unique key: a duplicate would show).
 */
import type pg from 'pg';
import { z } from 'zod';
import { defineFunction, isRunledgerError, signal, TerminalError, type Db, type PrismaClientLike } from '../../src/index.js';

export const PROOF_FUNCTION = 'fnproof.order';

export const PROOF_DDL = `
  CREATE SCHEMA IF NOT EXISTS fnproof;
  -- One row per execution of a plain step's fn, written outside the ledger (autocommit).
  CREATE TABLE IF NOT EXISTS fnproof.side_effects (
    id bigserial PRIMARY KEY,
    run_id uuid NOT NULL,
    step text NOT NULL,
    attempt int NOT NULL,
    pid int NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  CREATE INDEX IF NOT EXISTS side_effects_run_idx ON fnproof.side_effects (run_id, step);
  -- The host's write of a transactional step, through the host's transaction client.
  CREATE TABLE IF NOT EXISTS fnproof.host_effects (
    id bigserial PRIMARY KEY,
    run_id uuid NOT NULL,
    step text NOT NULL,
    sleep_ms int NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  CREATE INDEX IF NOT EXISTS host_effects_run_idx ON fnproof.host_effects (run_id, step);`;

export const PLAIN_STEPS = ['load', 'wake', 'receipt'] as const;
export const TRANSACTIONAL_STEPS = ['charge', 'ship'] as const;

/** What a run of `fnproof.order` on `n` returns (each step adds its own term). */
export function expectedProofResult(n: number): { n: number; total: number } {
  return { n, total: n * 2 + 1 + APPROVAL.bonus + 10 + 100 + 1_000 };
}

/** The payload of every run's `approve` signal; its bonus is part of the result. */
export const APPROVAL = { bonus: 10_000 } as const;

/**
 * Sends run `runId` its `approve` signal, once however often it is called (an idempotency key per run).
 * 'finished': the run ended first (canceled by an operator).
 */
export async function sendApproval(db: Db, runId: string): Promise<'sent' | 'duplicate' | 'finished'> {
  try {
    const receipt = await signal(db, runId, 'approve', APPROVAL, { idempotencyKey: `approve:${runId}` });
    return receipt.duplicate ? 'duplicate' : 'sent';
  } catch (error) {
    if (isRunledgerError(error) && error.code === 'workflow.run_already_finished') return 'finished';
    throw error;
  }
}

const input = z.object({ n: z.number().int(), sleepMs: z.number().int().min(0) });
// Many attempts, short backoff: an attempt cut by a kill or a fault is retried, never dead-lettered.
const settings = { retry: { maxAttempts: 100, backoff: { baseDelayMs: 50, maxDelayMs: 500 } }, timeoutSeconds: 60 } as const;

/**
 * The same definition without a body, to start runs where the steps' pools do not exist (the chaos
 * controller, a probe driver): a run carries the name and settings, not the body.
 */
const starter = defineFunction(
  PROOF_FUNCTION,
  input,
  () => {
    throw new TerminalError('fnproof.order runs only on a worker that registers proofFunction');
  },
  settings,
);

/** A run of `fnproof.order` on `n`, sleeping `sleepMs`. */
export function proofRun(n: number, sleepMs: number): ReturnType<typeof starter.run> {
  return starter.run({ n, sleepMs });
}

const linger = (maxMs: number) => new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * maxMs));

/**
 * The probe's function. `sideEffects`: a pool outside the worker's (its INSERTs autocommit); `host`: the
 * host's root Prisma client, whose transactions the transactional steps run in.
 */
export function proofFunction(sideEffects: pg.Pool, host: PrismaClientLike, lingerMs = 20) {
  const side = async (runId: string, step: string, attempt: number) => {
    await sideEffects.query('INSERT INTO fnproof.side_effects (run_id, step, attempt, pid) VALUES ($1, $2, $3, $4)', [runId, step, attempt, process.pid]);
    await linger(lingerMs);
  };
  type Tx = { $executeRaw: (query: TemplateStringsArray, ...values: unknown[]) => Promise<number> };
  const hostWrite = async (tx: Tx, runId: string, step: string, sleepMs: number) => {
    await tx.$executeRaw`INSERT INTO fnproof.host_effects (run_id, step, sleep_ms) VALUES (${runId}::uuid, ${step}, ${sleepMs}::int)`;
    await linger(lingerMs);
  };
  return defineFunction(
    PROOF_FUNCTION,
    input,
    async ({ n, sleepMs }, ctx) => {
      const run = ctx.workflowRunId;
      const loaded = await ctx.step('load', async () => {
        await side(run, 'load', ctx.attempt);
        return n * 2;
      });
      const charged = await ctx.transactionalStep('charge', async (tx) => {
        await hostWrite(tx as Tx, run, 'charge', sleepMs);
        return loaded + 1;
      });
      // Waits (no slot held) until the driver's signal: delivered once, never before it was sent (verified below).
      const approval = await ctx.waitForSignal<typeof APPROVAL>('approve');
      if (approval.status !== 'received') throw new TerminalError('fnproof.order: the approve wait has no timeout');
      await ctx.sleep(sleepMs);
      const woke = await ctx.step('wake', async () => {
        await side(run, 'wake', ctx.attempt);
        return charged + approval.payload.bonus + 10;
      });
      const shipped = await ctx.transactionalStep('ship', async (tx) => {
        await hostWrite(tx as Tx, run, 'ship', sleepMs);
        return woke + 100;
      });
      const total = await ctx.step('receipt', async () => {
        await side(run, 'receipt', ctx.attempt);
        return shipped + 1_000;
      });
      return { n, total };
    },
    { ...settings, transaction: host },
  );
}

export interface ProofFindings {
  runs: number;
  succeeded: number;
  canceled: number;
  /** Executions of plain steps: (run, step) pairs, executions, pairs run more than once, the most runs of one pair. */
  plain: { steps: number; executions: number; rerunSteps: number; maxRuns: number; rerunByStep: { [step: string]: number } };
  /** Host effects: rows, and (run, step) pairs whose count is not 1 for a recorded step (0 otherwise). */
  host: { rows: number; wrong: number };
  /** Lateness of each wake (first execution of `wake` - the recorded wake time), ms. */
  latenessMs: number[];
  violations: string[];
}

const listed = (rows: unknown[], max = 5) => `${rows.length}: ${JSON.stringify(rows.slice(0, max))}${rows.length > max ? ' ...' : ''}`;
const RECORDED = ['load', 'charge', '$signal:approve', '$sleep', 'wake', 'ship', 'receipt'];

export interface ProofScope {
  /** The kills and connection faults that happened: a plain step re-runs at most once per fault. */
  faults: number;
  /** The runs to check (default: every `fnproof.order` run). */
  runIds?: readonly string[];
  /** Canceled runs are allowed (an operator cancels runs in the chaos run); the rest must succeed. */
  canceledAllowed?: boolean;
}

/**
 * The invariants, read from the database once every run is terminal:
 * - each run SUCCEEDED once (one SUCCEEDED event of its body's job) with the right result and its six
 *   recorded steps in call order (a canceled run, where allowed: a prefix of them);
 * - each transactional step's host effect exists once if the step is recorded, never otherwise;
 * - each recorded plain step ran at least once, at most faults + 1 times, never twice in one attempt;
 * - no wake step ran before the recorded wake time, nor before the charge's commit + the requested sleep;
 * - each run's `approve` signal was sent once and consumed once, by its `$signal:approve` step, never before
 *   it was sent, and nothing after the wait ran before the signal was sent.
 */
export async function verifyFunctionProof(db: pg.Pool | pg.Client, scope: ProofScope): Promise<ProofFindings> {
  const { faults, runIds } = scope;
  const violations: string[] = [];
  const { rows: runs } = await db.query<{
    id: string;
    status: string;
    result: { n: number; total: number } | null;
    n: number;
    successes: number;
    steps: string[];
  }>(
    `SELECT r.id, r.status::text AS status, r.result, (j.payload->>'n')::int AS n,
            (SELECT count(*)::int FROM runledger.job_trail t WHERE t.job_id = j.id AND t.event_type = 'SUCCEEDED') AS successes,
            ARRAY(SELECT s.step_key FROM runledger.workflow_steps s
                   WHERE s.workflow_run_id = r.id AND s.execution_kind = 'FUNCTION' ORDER BY s.call_index) AS steps
       FROM runledger.workflow_runs r
       JOIN runledger.workflow_steps fs ON fs.workflow_run_id = r.id AND fs.step_key = '$function'
       JOIN runledger.job_queue j ON j.id = fs.job_id
      WHERE r.workflow_type = $1 AND ($2::uuid[] IS NULL OR r.id = ANY($2::uuid[]))`,
    [PROOF_FUNCTION, runIds ?? null],
  );
  if (runIds && runs.length !== runIds.length) violations.push(`runs started ${runIds.length}, found ${runs.length}`);
  const wrongRuns = runs.filter((run) => {
    if (run.status === 'CANCELED' && scope.canceledAllowed) return run.successes !== 0 || RECORDED.slice(0, run.steps.length).join(',') !== run.steps.join(',');
    const expected = expectedProofResult(run.n);
    return (
      run.status !== 'SUCCEEDED' ||
      run.successes !== 1 ||
      run.result?.n !== expected.n ||
      run.result?.total !== expected.total ||
      run.steps.join(',') !== RECORDED.join(',')
    );
  });
  if (wrongRuns.length > 0) violations.push(`runs not SUCCEEDED once with the right result and the seven recorded steps: ${listed(wrongRuns)}`);

  const ids = runs.map((run) => run.id);
  const recorded = new Set(runs.flatMap((run) => run.steps.map((step) => `${run.id}/${step}`)));
  // Host effects: one per recorded transactional step, none for an unrecorded one (its transaction rolled back).
  const { rows: host } = await db.query<{ run_id: string; step: string; n: number }>(
    `SELECT x.run_id, s.step, count(h.id)::int AS n
       FROM unnest($1::uuid[]) AS x(run_id) CROSS JOIN unnest($2::text[]) AS s(step)
       LEFT JOIN fnproof.host_effects h ON h.run_id = x.run_id AND h.step = s.step
      GROUP BY 1, 2`,
    [ids, TRANSACTIONAL_STEPS],
  );
  const wrongHost = host.filter((row) => row.n !== (recorded.has(`${row.run_id}/${row.step}`) ? 1 : 0));
  if (wrongHost.length > 0) violations.push(`transactional steps whose host effect is not there once per record: ${listed(wrongHost)}`);
  const { rows: hostRows } = await db.query<{ n: number; stray: number }>(
    'SELECT count(*)::int AS n, (count(*) FILTER (WHERE NOT (run_id = ANY($1::uuid[]))))::int AS stray FROM fnproof.host_effects',
    [ids],
  );
  if (!runIds && hostRows[0]!.stray > 0) violations.push(`host effects of no run: ${hostRows[0]!.stray}`);

  // Plain steps: a recorded one ran at least once; at most once per fault beyond the first, and never twice in
  // one attempt (an attempt re-runs a step only after the one running it was lost: killed, or its connection cut).
  const { rows: plain } = await db.query<{ run_id: string; step: string; n: number; attempts: number }>(
    `SELECT x.run_id, s.step, count(e.id)::int AS n, count(DISTINCT e.attempt)::int AS attempts
       FROM unnest($1::uuid[]) AS x(run_id) CROSS JOIN unnest($2::text[]) AS s(step)
       LEFT JOIN fnproof.side_effects e ON e.run_id = x.run_id AND e.step = s.step
      GROUP BY 1, 2`,
    [ids, PLAIN_STEPS],
  );
  const never = plain.filter((row) => row.n === 0 && recorded.has(`${row.run_id}/${row.step}`));
  if (never.length > 0) violations.push(`plain steps recorded but never executed: ${listed(never)}`);
  const tooMany = plain.filter((row) => row.n > faults + 1);
  if (tooMany.length > 0) violations.push(`plain steps run more often than faults + 1 (${faults + 1}): ${listed(tooMany)}`);
  const sameAttempt = plain.filter((row) => row.attempts !== row.n);
  if (sameAttempt.length > 0) violations.push(`plain steps run twice within one attempt: ${listed(sameAttempt)}`);

  // Sleeps: the wake step never ran before the recorded wake time, nor before the charge + the requested sleep.
  const { rows: wakes } = await db.query<{ run_id: string; lateness_ms: number; early_recorded: boolean; early_requested: boolean }>(
    `SELECT w.run_id,
            extract(epoch FROM (w.first - (s.output->>'wakeAt')::timestamptz)) * 1000 AS lateness_ms,
            w.first < (s.output->>'wakeAt')::timestamptz AS early_recorded,
            w.first < h.at + make_interval(secs => h.sleep_ms / 1000.0) AS early_requested
       FROM (SELECT run_id, min(at) AS first FROM fnproof.side_effects WHERE step = 'wake' AND run_id = ANY($1::uuid[]) GROUP BY 1) w
       JOIN runledger.workflow_steps s ON s.workflow_run_id = w.run_id AND s.step_key = '$sleep' AND s.execution_kind = 'FUNCTION'
       JOIN fnproof.host_effects h ON h.run_id = w.run_id AND h.step = 'charge'`,
    [ids],
  );
  const early = wakes.filter((row) => row.early_recorded || row.early_requested);
  if (early.length > 0) violations.push(`sleeps that woke early: ${listed(early)}`);

  // Signals: one per run (the idempotency key), consumed by the run's wait step iff that step is recorded,
  // never before it was sent, and the step after the wait ran after the send.
  const { rows: signals } = await db.query<{ run_id: string; sent: number; consumed_by_wait: number; early: number; after_before_send: boolean }>(
    `SELECT x.run_id, count(g.id)::int AS sent,
            (count(g.id) FILTER (WHERE g.consumed_by_step_id = w.id))::int AS consumed_by_wait,
            (count(g.id) FILTER (WHERE g.consumed_at < g.created_at))::int AS early,
            COALESCE(bool_or((SELECT min(e.at) FROM fnproof.side_effects e WHERE e.run_id = x.run_id AND e.step = 'wake') < g.created_at), false)
              AS after_before_send
       FROM unnest($1::uuid[]) AS x(run_id)
       LEFT JOIN runledger.workflow_signals g ON g.workflow_run_id = x.run_id AND g.name = 'approve'
       LEFT JOIN runledger.workflow_steps w ON w.workflow_run_id = x.run_id AND w.step_key = '$signal:approve' AND w.execution_kind = 'FUNCTION'
      GROUP BY 1`,
    [ids],
  );
  const statusOf = new Map(runs.map((run) => [run.id, run.status]));
  const wrongSignals = signals.filter((row) => {
    // A succeeded run: its one signal consumed by its wait. A canceled one may have ended before either.
    const succeededWrong = statusOf.get(row.run_id) === 'SUCCEEDED' && (row.sent !== 1 || row.consumed_by_wait !== 1);
    return row.sent > 1 || succeededWrong || row.early > 0 || row.after_before_send;
  });
  if (wrongSignals.length > 0) violations.push(`signals not sent once and consumed once by the wait, after the send: ${listed(wrongSignals)}`);

  return {
    runs: runs.length,
    succeeded: runs.filter((run) => run.status === 'SUCCEEDED').length,
    canceled: runs.filter((run) => run.status === 'CANCELED').length,
    plain: {
      steps: plain.filter((row) => row.n > 0).length,
      executions: plain.reduce((sum, row) => sum + row.n, 0),
      rerunSteps: plain.filter((row) => row.n > 1).length,
      maxRuns: Math.max(0, ...plain.map((row) => row.n)),
      rerunByStep: Object.fromEntries(PLAIN_STEPS.map((step) => [step, plain.filter((row) => row.step === step && row.n > 1).length])),
    },
    host: { rows: hostRows[0]!.n, wrong: wrongHost.length },
    latenessMs: wakes.map((row) => Number(row.lateness_ms)),
    violations,
  };
}
