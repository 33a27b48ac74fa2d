/**
 * The chaos run's job handlers. Each one first records its execution in
 * `chaos.executions` (same database, autocommit, before doing anything), so
 * the end of the run can account for every execution: a retry has a new
 * attempt, a requeue a new run number, a replay a new job with lineage;
 * anything else after a committed success is an unexplained duplicate.
 */
import { z } from 'zod';
import type pg from 'pg';
import { defineJob, RetryableError, TerminalError, type AnyJobDefinition, type Client, type JobContext } from './api.js';

export const EXECUTIONS_DDL = `
  CREATE SCHEMA IF NOT EXISTS chaos;
  CREATE TABLE IF NOT EXISTS chaos.executions (
    id bigserial PRIMARY KEY,
    job_id uuid NOT NULL,
    job_type text NOT NULL,
    run_number int NOT NULL,
    attempt int NOT NULL,
    worker text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    retry_not_before timestamptz
  );
  CREATE INDEX IF NOT EXISTS executions_job_idx ON chaos.executions (job_id, run_number, attempt);
  -- The host effect of a transactional handler (chaos.tx), written through ctx.tx: no unique key, so a
  -- duplicate effect would show. Invariant (verify.ts): one row per SUCCEEDED chaos.tx job, none otherwise.
  CREATE TABLE IF NOT EXISTS chaos.effects (
    id bigserial PRIMARY KEY,
    job_id uuid NOT NULL,
    run_number int NOT NULL,
    attempt int NOT NULL
  );
  CREATE INDEX IF NOT EXISTS effects_job_idx ON chaos.effects (job_id);`;

const payload = z.object({
  n: z.number().optional(),
  failUntil: z.number().optional(),
  size: z.number().optional(),
  key: z.string().optional(),
  fail: z.boolean().optional(),
  ms: z.number().optional(),
});

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        return reject(signal.reason);
      },
      { once: true },
    );
  });

/** `host`: the client whose transactions chaos.tx attempts run in (the host application's, in a real app). */
export function chaosHandlers(pool: pg.Pool, worker: string, host: Client): AnyJobDefinition[] {
  const record = async (ctx: JobContext, retryNotBefore: Date | null = null) => {
    try {
      await pool.query('INSERT INTO chaos.executions (job_id, job_type, run_number, attempt, worker, retry_not_before) VALUES ($1, $2, $3, $4, $5, $6)', [
        ctx.jobId,
        ctx.jobType,
        ctx.runNumber,
        ctx.attempt,
        worker,
        retryNotBefore,
      ]);
    } catch {
      // Unrecorded, the execution must not count: fail it so a later attempt runs (and records) again.
      throw new RetryableError('could not record the execution', { code: 'chaos.record_failed' });
    }
  };
  return [
    defineJob('chaos.ok', payload, async ({ n }, ctx) => {
      await record(ctx);
      await pause(5 + Math.random() * 35, ctx.signal);
      return { ok: true, n: n ?? 0, attempt: ctx.attempt };
    }),
    defineJob('chaos.flaky', payload, async ({ failUntil }, ctx) => {
      if (ctx.attempt <= (failUntil ?? 1)) {
        const retryNotBefore = new Date(Date.now() + 300 + Math.floor(Math.random() * 500));
        await record(ctx, retryNotBefore);
        throw new RetryableError('flaky upstream', { code: 'chaos.flaky', retryNotBefore });
      }
      await record(ctx);
      return { recoveredAtAttempt: ctx.attempt };
    }),
    defineJob('chaos.fail', payload, async (_payload, ctx) => {
      await record(ctx);
      throw new TerminalError('this job always fails', { code: 'chaos.always_fails' });
    }),
    defineJob('chaos.slow', payload, async (_payload, ctx) => {
      await record(ctx);
      await pause(2_500, ctx.signal);
      return { slow: true };
    }),
    defineJob('chaos.large', payload, async ({ size }, ctx) => {
      await record(ctx);
      const rows = Array.from({ length: size ?? 2_000 }, (_, i) => ({ i, text: `row ${i} of a large output `.repeat(4) }));
      return { rows };
    }),
    // A concurrency-keyed job (shapes.ts randomKeyedJob): its span, on the machine's monotonic clock (one clock
    // for every worker process), runs from after its claim committed to before its completion is sent; it is
    // written once it ended, so a slow write cannot stretch it (key-ledger.ts).
    defineJob('chaos.keyed', payload, async ({ key, ms, failUntil, fail }, ctx) => {
      await record(ctx);
      const started = process.hrtime.bigint();
      try {
        await pause(ms ?? 5, ctx.signal);
      } finally {
        const ended = process.hrtime.bigint();
        // Unwritten (a fault), the span is left out of the handler-side check; the ledger's check still covers it.
        await pool
          .query('INSERT INTO chaos.key_holds (key, job_id, run_number, attempt, worker, started_ns, ended_ns) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
            key,
            ctx.jobId,
            ctx.runNumber,
            ctx.attempt,
            worker,
            started.toString(),
            ended.toString(),
          ])
          .catch(() => undefined);
      }
      if (fail) throw new TerminalError('this keyed job always fails', { code: 'chaos.always_fails' });
      if (ctx.attempt <= (failUntil ?? 0)) throw new RetryableError('keyed job failed', { code: 'chaos.keyed_failed' });
      return { key, attempt: ctx.attempt };
    }),
    // A rate-limited job (shapes.ts randomRatedJob): its starts are read from the ledger (rate-ledger.ts).
    defineJob('chaos.rated', payload, async ({ key, ms, failUntil, fail }, ctx) => {
      await record(ctx);
      await pause(ms ?? 5, ctx.signal);
      if (fail) throw new TerminalError('this rate-limited job always fails', { code: 'chaos.always_fails' });
      if (ctx.attempt <= (failUntil ?? 0)) throw new RetryableError('rate-limited job failed', { code: 'chaos.rated_failed' });
      return { key, attempt: ctx.attempt };
    }),
    // Transactional: its effect commits with its success or not at all, whatever is killed or terminated meanwhile.
    defineJob(
      'chaos.tx',
      payload,
      async ({ n, failUntil }, ctx) => {
        await record(ctx);
        await ctx.tx
          .$executeRaw`INSERT INTO chaos.effects (job_id, run_number, attempt) VALUES (${ctx.jobId}::uuid, ${ctx.runNumber}::int, ${ctx.attempt}::int)`;
        await pause(5 + Math.random() * 35, ctx.signal);
        // After the effect: a failed attempt must roll it back.
        if (ctx.attempt <= (failUntil ?? 0)) throw new RetryableError('failed after its write', { code: 'chaos.tx_failed' });
        return { effect: n ?? 0, attempt: ctx.attempt };
      },
      { transaction: host },
    ),
  ];
}
