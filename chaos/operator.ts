/**
 * What an operator (or the application) does to live runs and jobs while the
 * chaos goes on: cancel runs, complete external steps (sometimes twice with
 * the same outcome, sometimes twice with conflicting ones, concurrently),
 * replay succeeded direct jobs (sometimes the same key twice at once), and
 * requeue dead-lettered ones. Targets are picked by reading the database;
 * every change goes through runledger's API (api.ts).
 */
import type pg from 'pg';
import { cancelOneJob, cancelRun, completeExternal, replaySucceeded, requeueDeadLettered, type Client, type ExternalOutcome } from './api.js';
import { PROOF_FUNCTION, sendApproval } from '../test/harness/function-proof.js';
import { summarizeError } from './messages.js';
import type { ChaosStats } from './stats.js';

export class Operator {
  private replayKeys = 0;

  constructor(
    readonly client: Client,
    private readonly admin: pg.Pool,
    private readonly stats: ChaosStats,
  ) {}

  async call(kind: string, fn: () => Promise<string>): Promise<void> {
    try {
      this.stats.count(kind, await fn());
    } catch (error) {
      this.stats.callerError(kind, summarizeError(error));
    }
  }

  async cancelRandomRun(): Promise<void> {
    const { rows } = await this.admin.query<{ id: string }>(
      `SELECT id FROM runledger.workflow_runs WHERE status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') ORDER BY random() LIMIT 1`,
    );
    if (rows[0]) await this.call('cancel_run', () => cancelRun(this.client, rows[0]!.id));
  }

  /** Cancels a concurrency-keyed job, a LEASED one when there is one: its lease keeps the key's slot until it runs out. */
  async cancelKeyedJob(): Promise<void> {
    const { rows } = await this.admin.query<{ id: string; status: string }>(
      `SELECT id, status::text AS status FROM runledger.job_queue
        WHERE concurrency_key IS NOT NULL AND status IN ('LEASED', 'PENDING')
        ORDER BY status = 'LEASED' DESC, random() LIMIT 1`,
    );
    const job = rows[0];
    if (!job || (job.status === 'PENDING' && Math.random() < 0.6)) return;
    await this.call(`cancel_keyed.${job.status.toLowerCase()}`, () => cancelOneJob(this.client, job.id));
  }

  /**
   * Sends the `approve` signal (test/harness/function-proof.ts) to up to `limit` live function runs that have
   * none yet: some before their wait opens, some while they wait (the drain sends every one left).
   */
  async approveFunctionRuns(limit: number): Promise<number> {
    const { rows } = await this.admin.query<{ id: string }>(
      `SELECT r.id FROM runledger.workflow_runs r
        WHERE r.workflow_type = $1 AND r.status = 'RUNNING'
          AND NOT EXISTS (SELECT 1 FROM runledger.workflow_signals g WHERE g.workflow_run_id = r.id)
        ORDER BY random() LIMIT $2`,
      [PROOF_FUNCTION, limit],
    );
    await Promise.all(rows.map((run) => this.call('signal_function', () => sendApproval(this.client, run.id))));
    return rows.length;
  }

  /** Completes waiting external steps; `drain` completes all of them, once, successfully. */
  async completeExternalSteps(limit: number, drain = false): Promise<number> {
    const { rows } = await this.admin.query<{ workflow_run_id: string; step_key: string }>(
      `SELECT workflow_run_id, step_key FROM runledger.workflow_steps
        WHERE status = 'WAITING_FOR_EXTERNAL' ORDER BY random() LIMIT $1`,
      [limit],
    );
    await Promise.all(
      rows.map(async (step) => {
        const first: ExternalOutcome = drain || Math.random() < 0.8 ? { status: 'succeeded', output: { by: 'operator' } } : { status: 'failed' };
        const roll = drain ? 1 : Math.random();
        const complete = (outcome: ExternalOutcome, kind: string) =>
          this.call(kind, () => completeExternal(this.client, step.workflow_run_id, step.step_key, outcome));
        if (roll < 0.2) {
          // The same completion twice at once: both answer with the stored step.
          await Promise.all([complete(first, 'complete_external.twice'), complete(first, 'complete_external.twice')]);
        } else if (roll < 0.35) {
          // Conflicting completions at once: one wins, the other is a coded conflict.
          const other: ExternalOutcome = first.status === 'succeeded' ? { status: 'failed' } : { status: 'succeeded', output: { by: 'someone else' } };
          await Promise.all([complete(first, 'complete_external.conflicting'), complete(other, 'complete_external.conflicting')]);
        } else {
          await complete(first, 'complete_external');
        }
      }),
    );
    return rows.length;
  }

  async replayRandomSucceeded(): Promise<void> {
    const { rows } = await this.admin.query<{ id: string; run_number: number }>(
      `SELECT id, run_number FROM runledger.job_queue
        WHERE status = 'SUCCEEDED' AND workflow_step_id IS NULL
        ORDER BY random() LIMIT 1`,
    );
    const source = rows[0];
    if (!source) return;
    this.replayKeys += 1;
    const key = `chaos-replay-${this.replayKeys}`;
    if (Math.random() < 0.4) {
      // The same replay request twice at once: one inserts, the other gets the existing replay.
      await Promise.all([
        this.call('replay.same_key_twice', () => replaySucceeded(this.client, source.id, source.run_number, key)),
        this.call('replay.same_key_twice', () => replaySucceeded(this.client, source.id, source.run_number, key)),
      ]);
    } else {
      await this.call('replay', () => replaySucceeded(this.client, source.id, source.run_number, key));
    }
  }

  async requeueDeadLettered(): Promise<void> {
    const { rows } = await this.admin.query<{ id: string; run_number: number }>(
      `SELECT id, run_number FROM runledger.job_queue
        WHERE status = 'DEAD_LETTERED' AND workflow_step_id IS NULL AND run_number < 3 ORDER BY random() LIMIT 2`,
    );
    await Promise.all(rows.map((job) => this.call('requeue', () => requeueDeadLettered(this.client, job.id, job.run_number))));
  }
}
