/**
 * The chaos run's final assertions, after the drain. Each failure is a
 * violation in `stats`; the figures feed the summary.
 */
import type pg from 'pg';
import { PROOF_FUNCTION, verifyFunctionProof } from '../test/harness/function-proof.js';
import { checkIntegrity, type Client, type IntegrityReport } from './api.js';
import type { DuplicateMessage } from './messages.js';
import type { TerminalNotificationCounter } from './listener.js';
import type { ChaosStats } from './stats.js';
import { verifyConcurrencyKeys, type KeyFindings } from './key-ledger.js';
import { verifyRateLimits, type RateFindings } from './rate-ledger.js';

export interface Findings {
  runs: Record<string, number>;
  jobs: Record<string, number>;
  executions: { total: number; first: number; retries: number; requeues: number; replays: number; rerunsAfterRelease: number; unexplained: number };
  notifications: { received: number; runs: number; missedLookedUp: number; missedInListenerGaps: number };
  duplicates: { reports: number; keys: number; collapsed: number };
  integrity: { runs: number; jobs: number; violations: number };
  /** chaos.tx jobs checked, and those whose host effect count is not 1 for a success, 0 otherwise. */
  effects: { jobs: number; succeeded: number; wrong: number };
  /** The durable-function shape (test/harness/function-proof.ts): runs, their endings, re-runs, wake lateness. */
  functions: { runs: number; succeeded: number; canceled: number; plainExecutions: number; rerunSteps: number; hostEffects: number; latenessP99Ms: number };
  /** The concurrency-key shape (key-ledger.ts). */
  concurrency: KeyFindings;
  /** The rate-limit shape (rate-ledger.ts). */
  rates: RateFindings;
  deadlocks: number;
}

const listed = (rows: unknown[], max = 5) => `${rows.length}: ${JSON.stringify(rows.slice(0, max))}${rows.length > max ? ' ...' : ''}`;

export async function verifyChaosRun(
  api: Client,
  admin: pg.Pool,
  stats: ChaosStats,
  counter: TerminalNotificationCounter,
  duplicates: readonly DuplicateMessage[],
  deadlocksBefore: number,
  databaseName: string,
): Promise<Findings> {
  // 1. The integrity checker, through the public API.
  const report = await checkIntegrity(api);
  for (const v of report.violations) stats.violation(`integrity: ${describeViolation(v)}`);

  // 2. Drained: every run terminal, no job left to run.
  const runs = await count(admin, 'SELECT status::text AS key, count(*)::int AS n FROM runledger.workflow_runs GROUP BY 1');
  const jobs = await count(admin, 'SELECT status::text AS key, count(*)::int AS n FROM runledger.job_queue GROUP BY 1');
  const live = await admin.query(`SELECT id, status FROM runledger.workflow_runs WHERE status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') LIMIT 20`);
  if (live.rows.length > 0) stats.violation(`runs not terminal after the drain: ${listed(live.rows)}`);
  const liveJobs = await admin.query(`SELECT id, status FROM runledger.job_queue WHERE status IN ('PENDING', 'LEASED') LIMIT 20`);
  if (liveJobs.rows.length > 0) stats.violation(`jobs still PENDING or LEASED after the drain: ${listed(liveJobs.rows)}`);

  // 3. Exactly one terminal notification per run; a missing one is looked up against the listener's gaps.
  const all = await admin.query<{ id: string; status: string; finished_at: Date | null }>(
    'SELECT id, status::text AS status, finished_at FROM runledger.workflow_runs',
  );
  const known = new Set<string>();
  let missedLookedUp = 0;
  let missedInListenerGaps = 0;
  let received = 0;
  for (const run of all.rows) {
    known.add(run.id);
    const heard = counter.received.get(run.id) ?? [];
    received += heard.length;
    if (heard.length > 1) stats.violation(`run ${run.id} had ${heard.length} terminal notifications: ${heard.join(', ')}`);
    if (heard.length === 1 && heard[0] !== run.status) stats.violation(`run ${run.id} was notified as ${heard[0]} but is ${run.status}`);
    if (heard.length === 0 && run.finished_at) {
      missedLookedUp += 1;
      // The notification is sent at commit, at or after finished_at (the transaction's start): a gap explains it
      // only if the listener was down at some point from finished_at on.
      const finished = run.finished_at.getTime();
      const inGap = counter.gaps.some((gap) => (gap.to === null || gap.to.getTime() >= finished) && gap.from.getTime() <= finished + 60_000);
      if (inGap) missedInListenerGaps += 1;
      else
        stats.violation(
          `run ${run.id} is ${run.status} since ${run.finished_at.toISOString()} but no terminal notification arrived (listener had no gap then)`,
        );
    }
  }
  for (const runId of counter.received.keys()) if (!known.has(runId)) stats.violation(`terminal notification for unknown run ${runId}`);

  // 4. Executions: each (job, run, attempt) at most once; none after the success of its run was committed;
  //    every success was executed; retryNotBefore honoured after a recorded retry.
  //    A transactional attempt cut by a database fault is released with its attempt given back (a RELEASED
  //    event, reason database.unavailable, naming the attempt): its rolled-back execution explains one re-run.
  const repeated = await admin.query<{ job_id: string; run_number: number; attempt: number; n: number; released: number }>(`
    SELECT x.job_id, x.run_number, x.attempt, count(*)::int AS n,
           (SELECT count(*)::int FROM runledger.job_events e
             WHERE e.job_id = x.job_id AND e.run_number = x.run_number AND e.event_type = 'RELEASED'
               AND e.payload->>'reason' = 'database.unavailable' AND (e.payload->>'releasedAttempt')::int = x.attempt) AS released
      FROM chaos.executions x GROUP BY 1, 2, 3 HAVING count(*) > 1`);
  const twice = repeated.rows.filter((row) => row.n - 1 > row.released);
  const rerunsAfterRelease = repeated.rows.reduce((sum, row) => sum + Math.min(row.n - 1, row.released), 0);
  if (twice.length > 0) stats.violation(`executions of one attempt more than once: ${listed(twice.slice(0, 20))}`);
  const afterSuccess = await admin.query(`
    SELECT x.job_id, x.run_number, x.attempt AS executed_attempt, e.attempt AS succeeded_attempt
      FROM chaos.executions x
      JOIN runledger.job_trail e ON e.job_id = x.job_id AND e.run_number = x.run_number AND e.event_type = 'SUCCEEDED' AND e.attempt < x.attempt
     LIMIT 20`);
  if (afterSuccess.rows.length > 0) stats.violation(`executions after a committed success (no replay or requeue explains them): ${listed(afterSuccess.rows)}`);
  const unexecuted = await admin.query(`
    SELECT j.id, j.run_number, j.attempt FROM runledger.job_queue j
     WHERE j.status = 'SUCCEEDED' AND j.job_type <> '${PROOF_FUNCTION}' -- a function's body records its steps, not executions
       AND NOT EXISTS (SELECT 1 FROM chaos.executions x WHERE x.job_id = j.id AND x.run_number = j.run_number AND x.attempt = j.attempt)
     LIMIT 20`);
  if (unexecuted.rows.length > 0) stats.violation(`SUCCEEDED jobs whose succeeding attempt never executed: ${listed(unexecuted.rows)}`);
  const early = await admin.query(`
    SELECT x.job_id, x.attempt, x.retry_not_before, n.started_at AS next_started_at
      FROM chaos.executions x
      JOIN runledger.job_trail e ON e.job_id = x.job_id AND e.run_number = x.run_number AND e.attempt = x.attempt AND e.event_type = 'RETRY_SCHEDULED'
      JOIN chaos.executions n ON n.job_id = x.job_id AND n.run_number = x.run_number AND n.attempt = x.attempt + 1
     WHERE x.retry_not_before IS NOT NULL AND n.started_at < x.retry_not_before - interval '50 milliseconds'
     LIMIT 20`);
  if (early.rows.length > 0) stats.violation(`retries that ran before their retryNotBefore: ${listed(early.rows)}`);
  const { rows: classified } = await admin.query<{ total: number; first: number; retries: number; requeues: number; replays: number }>(`
    SELECT count(*)::int AS total,
           (count(*) FILTER (WHERE x.run_number = 1 AND x.attempt = 1 AND r.replay_job_id IS NULL))::int AS first,
           (count(*) FILTER (WHERE x.attempt > 1))::int AS retries,
           (count(*) FILTER (WHERE x.run_number > 1 AND x.attempt = 1))::int AS requeues,
           (count(*) FILTER (WHERE x.run_number = 1 AND x.attempt = 1 AND r.replay_job_id IS NOT NULL))::int AS replays
      FROM chaos.executions x
      LEFT JOIN runledger.job_replays r ON r.replay_job_id = x.job_id`);
  const executions = { ...classified[0]!, rerunsAfterRelease, unexplained: twice.length + afterSuccess.rows.length };

  // 5. Idempotent enqueues from several processes: one id per key.
  const byKey = new Map<string, Set<string>>();
  for (const d of duplicates) byKey.set(`${d.kind}:${d.key}`, (byKey.get(`${d.kind}:${d.key}`) ?? new Set()).add(d.id));
  for (const [key, ids] of byKey) if (ids.size > 1) stats.violation(`idempotent enqueue ${key} returned ${ids.size} different ids: ${[...ids].join(', ')}`);

  // 6. Transactional handlers: exactly one host effect per SUCCEEDED chaos.tx job (per job, whatever its runs:
  //    a requeue follows a dead letter, whose attempts rolled their effects back), none for any other ending.
  const effectCounts = await admin.query<{ id: string; status: string; effects: number }>(`
    SELECT j.id, j.status::text AS status, (SELECT count(*) FROM chaos.effects e WHERE e.job_id = j.id)::int AS effects
      FROM runledger.job_queue j WHERE j.job_type = 'chaos.tx'`);
  const wrongEffects = effectCounts.rows.filter((row) => row.effects !== (row.status === 'SUCCEEDED' ? 1 : 0));
  if (wrongEffects.length > 0) stats.violation(`transactional jobs whose host effect count is not 1 per success (0 otherwise): ${listed(wrongEffects)}`);
  const strayEffects = await admin.query(`
    SELECT e.job_id FROM chaos.effects e WHERE NOT EXISTS (SELECT 1 FROM runledger.job_queue j WHERE j.id = e.job_id) LIMIT 20`);
  if (strayEffects.rows.length > 0) stats.violation(`host effects of no job: ${listed(strayEffects.rows)}`);
  const effects = {
    jobs: effectCounts.rows.length,
    succeeded: effectCounts.rows.filter((row) => row.status === 'SUCCEEDED').length,
    wrong: wrongEffects.length + strayEffects.rows.length,
  };

  // 7. Durable functions: each SUCCEEDED once with its result (or CANCELED by the operator), each transactional
  //    step's host effect once per record, plain steps re-run only in a new attempt and at most once per fault,
  //    no early wake.
  const faults = stats.faults.kills + stats.faults.backendTerminations + stats.faults.outages;
  const proof = await verifyFunctionProof(admin, { faults, canceledAllowed: true });
  for (const v of proof.violations) stats.violation(`durable functions: ${v}`);
  const lateness = [...proof.latenessMs].sort((a, b) => a - b);
  const functions = {
    runs: proof.runs,
    succeeded: proof.succeeded,
    canceled: proof.canceled,
    plainExecutions: proof.plain.executions,
    rerunSteps: proof.plain.rerunSteps,
    hostEffects: proof.host.rows,
    latenessP99Ms: lateness.length === 0 ? Number.NaN : lateness[Math.ceil(lateness.length * 0.99) - 1]!,
  };

  // 8. Concurrency keys: never more than a key's limit of leases at once (ledger and handlers), slot counts equal
  //    to live lease rows, every keyed job ended once.
  const concurrency = await verifyConcurrencyKeys(admin);
  for (const v of concurrency.violations) stats.violation(`concurrency keys: ${v}`);

  // 9. Rate limits: never more than limit + burst starts of a key in a window of one period (ledger), every
  //    rate-limited job ended once.
  const rates = await verifyRateLimits(admin);
  for (const v of rates.violations) stats.violation(`rate limits: ${v}`);

  // 10. Deadlocks counted by the server.
  const deadlocks = (await deadlockCount(admin, databaseName)) - deadlocksBefore;
  if (deadlocks > 0) stats.violation(`pg_stat_database.deadlocks rose by ${deadlocks} during the run`);

  return {
    runs,
    jobs,
    executions,
    notifications: { received, runs: all.rows.length, missedLookedUp, missedInListenerGaps },
    duplicates: { reports: duplicates.length, keys: byKey.size, collapsed: duplicates.length - byKey.size },
    integrity: { runs: report.checked.runs, jobs: report.checked.jobs, violations: report.violations.length },
    effects,
    functions,
    concurrency,
    rates,
    deadlocks: deadlocks + stats.deadlocksSeen,
  };
}

export function describeViolation(v: IntegrityReport['violations'][number]): string {
  return `${v.kind} run=${v.workflowRunId ?? '-'} step=${v.stepId ?? '-'}${v.stepKey ? ` (${v.stepKey})` : ''} job=${v.jobId ?? '-'} expected=${JSON.stringify(v.expected)} found=${JSON.stringify(v.found)}`;
}

export async function deadlockCount(admin: pg.Pool, databaseName: string): Promise<number> {
  // The statistics collector reports with a delay (PostgreSQL 15+: at the end of each transaction of the reporting backend).
  const { rows } = await admin.query<{ n: string }>('SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = $1', [databaseName]);
  return Number(rows[0]?.n ?? 0);
}

async function count(admin: pg.Pool, sql: string): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ key: string; n: number }>(sql);
  return Object.fromEntries(rows.map((row) => [row.key, row.n]));
}
