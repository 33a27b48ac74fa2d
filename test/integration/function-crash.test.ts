/**
 * The durable-function crash probe, short (bench/probes/function-crash.ts runs it long): functions of five
 * steps (two transactional) and a sleep, run by worker processes SIGKILLed one after another while their
 * connections are terminated. Afterwards every function SUCCEEDED once with its result, each transactional
 * step's host effect exists exactly once, a plain step re-ran only in a new attempt (at most once per
 * fault), and no sleep woke before its time (test/harness/function-proof.ts).
 */
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../harness/database.js';
import { runFunctionCrashProbe } from '../harness/function-crash.js';

const db = useTestDatabase();
const RUNS = 80;

describe('durable functions under crashes and terminated connections', () => {
  it('completes every function once, host effects exactly once, no early wake', { timeout: 180_000 }, async () => {
    const admin = db.newPool({ max: 3 });
    const report = await runFunctionCrashProbe({
      url: db.url,
      admin,
      db: db.prisma,
      runs: RUNS,
      sleepMs: [300, 1_500],
      faultWindowMs: 15_000,
      lifeMs: [2_000, 4_000],
    });
    expect(report.violations).toEqual([]);
    expect(report.kills).toBeGreaterThanOrEqual(2);
    expect(report.succeeded).toBe(RUNS);
    expect(report.host.rows).toBe(2 * RUNS);
    expect(report.plain.steps).toBe(3 * RUNS);
    expect(report.latenessMs).toHaveLength(RUNS);
    expect(report.plain.executions).toBeGreaterThanOrEqual(3 * RUNS);
  });
});
