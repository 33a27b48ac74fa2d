/**
 * The workflow shapes and direct jobs the chaos run enqueues. Job settings
 * make each kind of ending reachable: retries with retryNotBefore, terminal
 * failures, timeouts (1 s against a 2.5 s handler), large outputs.
 */
import { proofRun } from '../test/harness/function-proof.js';
import { workflow, type DirectJobSpec, type WorkflowBuilder } from './api.js';

type Run = ReturnType<WorkflowBuilder['build']>;
export type ShapeName = 'diamond' | 'fanout' | 'gate' | 'on_terminal' | 'mixed' | 'transactional' | 'function';

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/** A leaf job of some kind: mostly quick successes, some trouble. */
function leaf(): { jobType: string; payload: Record<string, number>; settings: { maxAttempts?: number; timeoutSeconds?: number } } {
  const roll = Math.random();
  if (roll < 0.7) return { jobType: 'chaos.ok', payload: { n: 1 }, settings: {} };
  if (roll < 0.85) return { jobType: 'chaos.flaky', payload: { failUntil: 1 + Math.floor(Math.random() * 2) }, settings: { maxAttempts: 4 } };
  if (roll < 0.93) return { jobType: 'chaos.fail', payload: {}, settings: { maxAttempts: 1 } };
  if (roll < 0.97) return { jobType: 'chaos.large', payload: { size: 2_000 }, settings: {} };
  return { jobType: 'chaos.slow', payload: {}, settings: { maxAttempts: 2, timeoutSeconds: 1 } };
}

export function buildShape(shape: ShapeName, key?: string): Run {
  // A durable function (test/harness/function-proof.ts: 5 steps, 2 transactional, a sleep), checked by verify.ts.
  if (shape === 'function') return proofRun(Math.floor(Math.random() * 1_000_000), 200 + Math.floor(Math.random() * 2_800));
  const tag = { shape, ...(key ? { key } : {}) };
  let builder: WorkflowBuilder;
  switch (shape) {
    case 'diamond': {
      // Keyed runs are enqueued by several processes with the same request: no random parts.
      const b = key ? { jobType: 'chaos.ok', payload: { n: 2 }, settings: {} } : leaf();
      builder = workflow('chaos.diamond', tag)
        .job('a', 'chaos.ok', { n: 1 })
        .job('b', b.jobType, b.payload, b.settings)
        .job('c', 'chaos.flaky', { failUntil: 1 }, { maxAttempts: 3 })
        .job('d', 'chaos.ok', { n: 4 })
        .afterSuccess('b', ['a'])
        .afterSuccess('c', ['a'])
        .afterSuccess('d', ['b', 'c'])
        .resultStep('d');
      break;
    }
    case 'fanout': {
      builder = workflow('chaos.fanout', tag).job('root', 'chaos.ok', { n: 0 });
      const leaves: string[] = [];
      for (let i = 0; i < 200; i += 1) {
        const stepKey = `leaf-${i}`;
        leaves.push(stepKey);
        // Mostly quick successes: one failure would cancel the join, which is also a fine ending.
        builder = builder
          .job(stepKey, !key && Math.random() < 0.01 ? 'chaos.flaky' : 'chaos.ok', { n: i, failUntil: 1 }, { maxAttempts: 3 })
          .afterSuccess(stepKey, ['root']);
      }
      builder = builder.job('join', 'chaos.ok', { n: 200 }).afterSuccess('join', leaves).resultStep('join');
      break;
    }
    case 'gate': {
      builder = workflow('chaos.gate', tag)
        .job('prepare', 'chaos.ok', { n: 1 })
        .external('approve')
        .afterSuccess('approve', ['prepare'])
        .job('publish', 'chaos.large', { size: 500 })
        .afterSuccess('publish', ['approve'])
        .job('audit', 'chaos.ok', { n: 2 })
        .afterTerminal('audit', ['approve'])
        .resultStep('publish');
      break;
    }
    case 'on_terminal': {
      const risky = pick(['chaos.fail', 'chaos.slow', 'chaos.flaky'] as const);
      builder = workflow('chaos.on_terminal', tag)
        .job('risky', risky, { failUntil: 5 }, { maxAttempts: 2, timeoutSeconds: 1 })
        .job('cleanup', 'chaos.ok', { n: 1 })
        .afterTerminal('cleanup', ['risky'])
        .job('follow', 'chaos.ok', { n: 2 })
        .afterSuccess('follow', ['risky']);
      break;
    }
    case 'mixed': {
      const x = leaf();
      const y = leaf();
      builder = workflow('chaos.mixed', tag)
        .job('x', x.jobType, x.payload, x.settings)
        .job('y', y.jobType, y.payload, y.settings)
        .external('ext')
        .job('z', 'chaos.ok', { n: 3 })
        .afterTerminal('z', ['x', 'y'])
        .afterSuccess('z', ['ext']);
      break;
    }
    case 'transactional': {
      // Transactional steps (chaos.tx: one host effect each, committed with the step's success and its
      // dependents' release), some failing after their write on the first attempt.
      const failUntil = () => (key || Math.random() < 0.7 ? 0 : 1);
      builder = workflow('chaos.transactional', tag)
        .job('charge', 'chaos.tx', { n: 1, failUntil: failUntil() }, { maxAttempts: 8 })
        .job('reserve', 'chaos.tx', { n: 2, failUntil: failUntil() }, { maxAttempts: 8 })
        .job('ship', 'chaos.tx', { n: 3, failUntil: failUntil() }, { maxAttempts: 8 })
        .job('notify', 'chaos.ok', { n: 4 })
        .afterSuccess('ship', ['charge', 'reserve'])
        .afterSuccess('notify', ['ship'])
        .resultStep('notify');
      break;
    }
  }
  if (key) builder = builder.idempotencyKey(key);
  return builder.build();
}

export function randomShape(): ShapeName {
  const roll = Math.random();
  if (roll < 0.26) return 'diamond';
  if (roll < 0.31) return 'fanout';
  if (roll < 0.5) return 'gate';
  if (roll < 0.67) return 'on_terminal';
  if (roll < 0.77) return 'mixed';
  if (roll < 0.85) return 'transactional';
  return 'function';
}

export function randomDirectJob(): DirectJobSpec {
  if (Math.random() < 0.15) return { jobType: 'chaos.tx', payload: { n: 0, failUntil: Math.random() < 0.3 ? 1 : 0 }, maxAttempts: 8 };
  const l = leaf();
  return { jobType: l.jobType, payload: l.payload, ...l.settings };
}

/** The concurrency-key shape's keys: 20, of limits 1 to 4 (a key's limit never changes during the run). */
export const CHAOS_KEYS = Array.from({ length: 20 }, (_, i) => ({ key: `ck-${String(i).padStart(2, '0')}`, limit: 1 + (i % 4) }));

/**
 * A job of the concurrency-key shape: mostly a few ms, some longer (so a cancel can land on a live lease),
 * some failing once or twice and retried soon, a few always failing.
 */
export function randomKeyedJob(): DirectJobSpec {
  const { key, limit } = pick(CHAOS_KEYS);
  const roll = Math.random();
  const ms = roll < 0.65 ? 2 + Math.random() * 8 : roll < 0.85 ? 10 + Math.random() * 40 : 300 + Math.random() * 900;
  const fail = Math.random() < 0.04;
  const failUntil = !fail && Math.random() < 0.15 ? 1 + Math.floor(Math.random() * 2) : 0;
  return {
    jobType: 'chaos.keyed',
    payload: { key, ms: Math.round(ms), failUntil, fail },
    maxAttempts: 10,
    concurrency: { key, limit },
    backoff: { baseDelayMs: 50, maxDelayMs: 300 },
  };
}

/**
 * The rate-limit shape's keys (a key's setting never changes during the run): a quick one and a slow one, so
 * a burst of jobs outruns the bucket and waits for tokens.
 */
export const CHAOS_RATE_KEYS = [
  { key: 'rl-fast', limit: 20, periodMs: 500, burst: 5 },
  { key: 'rl-slow', limit: 8, periodMs: 1_000, burst: 3 },
] as const;

/** The key of a rate-limited job: the quick key four times in five. */
export function randomRateKey(): (typeof CHAOS_RATE_KEYS)[number] {
  return Math.random() < 0.8 ? CHAOS_RATE_KEYS[0] : CHAOS_RATE_KEYS[1];
}

/**
 * A job of the rate-limit shape on `rate` (default: a random key): mostly a few ms, some longer, some failing
 * once or twice and retried soon (each retry is a start and takes a token), a few always failing.
 */
export function randomRatedJob(rate: (typeof CHAOS_RATE_KEYS)[number] = randomRateKey()): DirectJobSpec {
  const roll = Math.random();
  const ms = roll < 0.8 ? 2 + Math.random() * 8 : 50 + Math.random() * 450;
  const fail = Math.random() < 0.03;
  const failUntil = !fail && Math.random() < 0.15 ? 1 + Math.floor(Math.random() * 2) : 0;
  return {
    jobType: 'chaos.rated',
    payload: { key: rate.key, ms: Math.round(ms), failUntil, fail },
    maxAttempts: 10,
    rateLimit: { ...rate },
    backoff: { baseDelayMs: 50, maxDelayMs: 300 },
  };
}
