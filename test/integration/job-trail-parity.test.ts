/**
 * The derived trail (migration 20261222000000_lean_ledger) reads as the
 * stored one did: the same rich history, written through the public API,
 * gives the same events in the same order, with the same types, numbers and
 * payloads as the code that stored every event (test/fixtures/trail/golden.json,
 * recorded with that code by running this scenario), while the hot
 * transitions no longer write job_events rows.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../harness/database.js';
import { readTrail, recordRichHistory } from '../harness/trail-scenario.js';

const db = useTestDatabase();
const golden = JSON.parse(readFileSync(new URL('../fixtures/trail/golden.json', import.meta.url), 'utf8')) as Record<string, unknown>;

describe('job trail', () => {
  it('returns the trail the stored events gave, for retries, reaping, release, stages, continuation, cancel, requeue, replay, intents and workflows', async () => {
    const trails = await recordRichHistory(db.prisma);
    expect(trails).toEqual(golden);
    // Paging by any size gives the same events, with times that never go back.
    for (const jobId of (await db.prisma.$queryRaw<{ id: string }[]>`SELECT id FROM runledger.job_queue`).map((r) => r.id)) {
      const one = await readTrail(db.prisma, jobId, 1);
      expect((await readTrail(db.prisma, jobId, 100)).map((e) => e.id)).toEqual(one.map((e) => e.id));
      expect(new Set(one.map((e) => e.id)).size).toBe(one.length);
      const times = one.map((e) => e.createdAt.getTime());
      expect(times).toEqual([...times].sort((a, b) => a - b));
    }
  });

  it('writes no job_events row for an enqueue, a claim, a start or a success', async () => {
    await recordRichHistory(db.prisma);
    const stored = await db.prisma.$queryRaw<{ event_type: string; n: number }[]>`
      SELECT event_type::text, count(*)::int AS n FROM runledger.job_events GROUP BY 1 ORDER BY 1`;
    // What remains stored says more than the job and attempt rows: lineage-bearing ENQUEUED (replay, intent), and
    // the rarer transitions.
    expect(stored.map((r) => r.event_type)).not.toEqual(expect.arrayContaining(['LEASED']));
    expect(stored.map((r) => r.event_type)).not.toEqual(expect.arrayContaining(['RUNNING']));
    expect(stored.map((r) => r.event_type)).not.toEqual(expect.arrayContaining(['SUCCEEDED']));
    const enqueued = await db.prisma.$queryRaw<{ job_type: string; payload: Record<string, unknown> }[]>`
      SELECT j.job_type, e.payload FROM runledger.job_events e JOIN runledger.job_queue j ON j.id = e.job_id
       WHERE e.event_type = 'ENQUEUED'`;
    expect(enqueued.length).toBeGreaterThan(0);
    for (const row of enqueued)
      expect(Object.keys(row.payload)).toEqual(expect.arrayContaining([row.job_type === 'trail.intent' ? 'enqueueIntentId' : 'replayedFromJobId']));
  });
});
