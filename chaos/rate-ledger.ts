/**
 * The rate-limit shape's proof (issue 35), read after the drain: never more than limit + burst starts of a key
 * in any window of one period, from the ledger (test/harness/rate-ledger.ts: every attempt's start, on the
 * bucket's clock); every rate-limited job holding the key its payload names, terminal, its success executed
 * once.
 */
import type pg from 'pg';
import { ledgerRateStarts, maxInWindow, replayBucket } from '../test/harness/rate-ledger.js';
import { CHAOS_RATE_KEYS } from './shapes.js';

export interface RateFindings {
  jobs: Record<string, number>;
  /**
   * Per key: its setting, its starts, and the most of them in a window of one period on the bucket's clock
   * (checked) and on the recorded starts (shown: a claim that queued on the key's row records a start before
   * the tokens it spent were counted).
   */
  perKey: { key: string; allowed: number; starts: number; bucketMax: number; recordedMax: number; recordedOver: number; withoutToken: number }[];
  /** Dead-lettered jobs the shape meant to succeed (faults used up their attempts). */
  deadLetteredUnplanned: number;
  violations: string[];
}

export async function verifyRateLimits(admin: pg.Pool): Promise<RateFindings> {
  const violations: string[] = [];
  const starts = await ledgerRateStarts(
    admin,
    CHAOS_RATE_KEYS.map((r) => r.key),
  );
  const { rows: settings } = await admin.query<{ key: string; max_starts: number; period_ms: number; burst: number }>(
    'SELECT key, max_starts, period_ms, burst FROM runledger.rate_limits WHERE key = ANY ($1::text[]) ORDER BY key',
    [CHAOS_RATE_KEYS.map((r) => r.key)],
  );
  const perKey: RateFindings['perKey'] = [];
  for (const rate of CHAOS_RATE_KEYS) {
    const row = settings.find((s) => s.key === rate.key);
    const keyStarts = starts.get(rate.key) ?? [];
    if (!row) {
      if (keyStarts.length > 0) violations.push(`key ${rate.key} has starts in the ledger but no rate_limits row`);
      continue;
    }
    // The run never changes a key's setting: a row that differs is a write the shape did not make.
    if (row.max_starts !== rate.limit || row.period_ms !== rate.periodMs || row.burst !== rate.burst)
      violations.push(`key ${rate.key}: rate_limits holds ${JSON.stringify(row)}, the shape enqueued ${JSON.stringify(rate)}`);
    const allowed = rate.limit + rate.burst;
    const bucket = maxInWindow(
      keyStarts.map((s) => s.bucketAt),
      rate.periodMs,
      allowed,
    );
    const recorded = maxInWindow(
      keyStarts.map((s) => s.at),
      rate.periodMs,
      allowed,
    );
    if (bucket.over > 0) {
      const inWindow = keyStarts.filter((s) => s.bucketAt >= bucket.at && s.bucketAt <= bucket.at + rate.periodMs).map((s) => s.id);
      violations.push(
        `key ${rate.key}: ${bucket.max} starts in ${rate.periodMs} ms from ${new Date(bucket.at).toISOString()} (limit + burst ${allowed}; ${bucket.over} windows over): ${inWindow.slice(0, 40).join(', ')}`,
      );
    }
    // The bucket replayed over the starts (full at the first, as enqueue creates it): none without a whole token.
    const replay = replayBucket(keyStarts, rate);
    if (replay.withoutToken > 0) violations.push(`key ${rate.key}: ${replay.withoutToken} starts found no whole token in the bucket replayed from the ledger`);
    perKey.push({
      key: rate.key,
      allowed,
      starts: keyStarts.length,
      bucketMax: bucket.max,
      recordedMax: recorded.max,
      recordedOver: recorded.over,
      withoutToken: replay.withoutToken,
    });
  }

  // Every rate-limited job terminal, on the key its payload names, its success executed once.
  const { rows: statuses } = await admin.query<{ status: string; n: number }>(`
    SELECT status::text AS status, count(*)::int AS n FROM runledger.job_queue WHERE job_type = 'chaos.rated' GROUP BY 1`);
  const jobs = Object.fromEntries(statuses.map((row) => [row.status, row.n]));
  const { rows: live } = await admin.query(`
    SELECT id, status FROM runledger.job_queue WHERE job_type = 'chaos.rated' AND status IN ('PENDING', 'LEASED') LIMIT 10`);
  if (live.length > 0) violations.push(`rate-limited jobs not terminal after the drain: ${JSON.stringify(live)}`);
  // A job without its key would start beside the limit, unseen by the window check (which reads keyed rows).
  const { rows: unkeyed } = await admin.query(`
    SELECT id, payload->>'key' AS key, rate_key FROM runledger.job_queue
     WHERE job_type = 'chaos.rated' AND rate_key IS DISTINCT FROM payload->>'key' LIMIT 10`);
  if (unkeyed.length > 0) violations.push(`chaos.rated jobs without the rate key their payload names: ${JSON.stringify(unkeyed)}`);
  const { rows: wrongRuns } = await admin.query(`
    SELECT j.id, j.run_number, j.attempt,
           (SELECT count(*)::int FROM chaos.executions x WHERE x.job_id = j.id AND x.run_number = j.run_number AND x.attempt = j.attempt) AS n
      FROM runledger.job_queue j
     WHERE j.job_type = 'chaos.rated' AND j.status = 'SUCCEEDED'
       AND (SELECT count(*) FROM chaos.executions x WHERE x.job_id = j.id AND x.run_number = j.run_number AND x.attempt = j.attempt) <> 1
     LIMIT 10`);
  if (wrongRuns.length > 0) violations.push(`rate-limited jobs whose succeeding attempt did not execute exactly once: ${JSON.stringify(wrongRuns)}`);
  const { rows: unplanned } = await admin.query<{ n: number }>(`
    SELECT count(*)::int AS n FROM runledger.job_queue
     WHERE job_type = 'chaos.rated' AND status = 'DEAD_LETTERED' AND NOT COALESCE((payload->>'fail')::boolean, false)`);

  return { jobs, perKey, deadLetteredUnplanned: unplanned[0]?.n ?? 0, violations };
}
