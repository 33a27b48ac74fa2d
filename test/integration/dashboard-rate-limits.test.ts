/**
 * Rate keys in the operator's API (src/dashboard/operations.ts) over HTTP, as concurrency keys are in
 * dashboard-operations.test.ts: listed in the caller's scope, changed by an admin only (CSRF, never read-only,
 * strict fields naming the one refused), and a rate-limited job's page says why it waits.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { callDashboard as call, dashboardSession, serveDashboard, type ServedDashboard } from '../harness/dashboard.js';

const db = useTestDatabase();

let served: ServedDashboard;
let admin: { cookie: string; token: string };
let tenant: { cookie: string; token: string };

beforeAll(async () => {
  served = await serveDashboard(db.prisma);
  admin = await dashboardSession(served.url);
  tenant = await dashboardSession(served.url, 'org:acme');
});

const rated = (key: string, organizationId: string, limit = 2, periodMs = 3_600_000) =>
  enqueueJob(db.prisma, { jobType: 'ops.rated', organizationId, payload: {}, rateLimit: { key, limit, periodMs } });
const rateRow = async (key: string) =>
  (
    await db.prisma.$queryRaw<{ max_starts: number; period_ms: number; burst: number; set_by: string }[]>`
      SELECT max_starts, period_ms, burst, set_by FROM runledger.rate_limits WHERE key = ${key}`
  )[0];

describe('rate keys over HTTP', () => {
  it('lists the keys of the caller scope with their limits, tokens and waiting jobs, and pages by key', async () => {
    await rated('ops-rate/a', 'acme');
    await rated('ops-rate/a', 'acme');
    await rated('ops-rate/b', 'other');
    type Keys = {
      items: { key: string; limit: number; periodMs: number; burst: number; tokens: number; waiting: number; setBy: string }[];
      nextAfter: string | null;
    };
    const mine = (body: Keys) => body.items.filter((item) => item.key.startsWith('ops-rate/'));
    const acme = (await call(served.url, 'GET', '/api/rate-limits', { scope: 'org:acme' })).body as Keys;
    expect(mine(acme)).toEqual([
      expect.objectContaining({ key: 'ops-rate/a', limit: 2, periodMs: 3_600_000, burst: 2, tokens: 2, waiting: 2, setBy: 'enqueue' }),
    ]);
    const all = (await call(served.url, 'GET', '/api/rate-limits')).body as Keys;
    expect(mine(all).map((item) => item.key)).toEqual(['ops-rate/a', 'ops-rate/b']);
    const after = (await call(served.url, 'GET', `/api/rate-limits?${new URLSearchParams({ after: 'ops-rate/a' })}`)).body as Keys;
    expect(mine(after).map((item) => item.key)).toEqual(['ops-rate/b']);
    // A blank or unknown query field is refused, naming it, never read as "every key".
    const blank = await call(served.url, 'GET', '/api/rate-limits?after=');
    expect([blank.status, blank.body.error.details.field]).toEqual([400, 'after']);
    const unknown = await call(served.url, 'GET', '/api/rate-limits?key=ops-rate/a');
    expect([unknown.status, unknown.body.error.code, unknown.body.error.details.field]).toEqual([400, 'dashboard.invalid_input', 'key']);
  });

  it("changes a key's rate limit for an admin only, with CSRF, never read-only, and only with a whole setting or null", async () => {
    await rated('ops-rate/set', 'acme', 3);
    const path = `/api/rate-limits/${encodeURIComponent('ops-rate/set')}`;
    const setting = { limit: 10, periodMs: 1000, burst: 4 };
    const refused = await call(served.url, 'POST', path, { scope: 'org:acme', body: setting, session: tenant });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'dashboard.forbidden']);
    expect((await call(served.url, 'POST', path, { body: setting })).status).toBe(403);
    const readOnly = await serveDashboard(db.prisma, { readOnly: true });
    const roSession = await dashboardSession(readOnly.url);
    expect((await call(readOnly.url, 'POST', path, { body: setting, session: roSession })).body.error.code).toBe('dashboard.read_only');
    await readOnly.close();
    // A missing, blank, wrong, partial or unknown field changes nothing.
    for (const [body, field] of [
      [{}, 'limit'],
      [{ periodMs: 1000 }, 'limit'],
      [{ limit: '' }, 'limit'],
      [{ limit: 0, periodMs: 1000 }, 'limit'],
      [{ limit: 2.5, periodMs: 1000 }, 'limit'],
      [{ limit: 5 }, 'periodMs'],
      [{ limit: 5, periodMs: '' }, 'periodMs'],
      [{ limit: 5, periodMs: 604_800_001 }, 'periodMs'],
      [{ limit: 5, periodMs: 1000, burst: '' }, 'burst'],
      [{ limit: 5, periodMs: 1000, burst: 0 }, 'burst'],
      [{ limit: null, periodMs: 1000 }, 'periodMs'],
      [{ limit: null, burst: 2 }, 'burst'],
      [{ limit: 5, periodMs: 1000, clear: true }, 'clear'],
      [{ unset: true }, 'unset'],
    ] as const) {
      const bad = await call(served.url, 'POST', path, { body, session: admin });
      expect([JSON.stringify(body), bad.status, bad.body.error.details.field]).toEqual([JSON.stringify(body), 400, field]);
    }
    expect(await rateRow('ops-rate/set')).toEqual({ max_starts: 3, period_ms: 3_600_000, burst: 3, set_by: 'enqueue' });

    const set = await call(served.url, 'POST', path, { body: setting, session: admin });
    expect(set.body.rateLimit).toMatchObject({ key: 'ops-rate/set', limit: 10, periodMs: 1000, burst: 4, setBy: 'operator', waiting: 1 });
    expect(await rateRow('ops-rate/set')).toEqual({ max_starts: 10, period_ms: 1000, burst: 4, set_by: 'operator' });
    // burst defaults to the limit.
    await call(served.url, 'POST', path, { body: { limit: 6, periodMs: 2000 }, session: admin });
    expect(await rateRow('ops-rate/set')).toEqual({ max_starts: 6, period_ms: 2000, burst: 6, set_by: 'operator' });
    const back = await call(served.url, 'POST', path, { body: { limit: null }, session: admin });
    expect(back.body.rateLimit).toMatchObject({ key: 'ops-rate/set', limit: 6, setBy: 'enqueue' });
    const missing = await call(served.url, 'POST', '/api/rate-limits/ops-rate%2Fnone', { body: { limit: null }, session: admin });
    expect([missing.status, missing.body.error.code]).toEqual([404, 'job.rate_key_not_found']);
  });
});

describe("a rate-limited job's page over HTTP", () => {
  it('gives the key, its tokens now and when the next one comes', async () => {
    const key = 'ops-rate/page';
    await rated(key, 'acme', 1, 60_000);
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ops.rated'], limit: 10, leaseSeconds: 60, markRunning: true });
    const { jobId } = await rated(key, 'acme', 1, 60_000);
    const asAdmin = (await call(served.url, 'GET', `/api/jobs/${jobId}`)).body;
    expect(asAdmin.job).toMatchObject({ status: 'PENDING', rateKey: key });
    expect(asAdmin.rateLimit).toMatchObject({ key, limit: 1, periodMs: 60_000, burst: 1, setBy: 'enqueue' });
    // The one token went to the first job: under one now, the next within the period.
    expect(asAdmin.rateLimit.tokens).toBeLessThan(1);
    expect(asAdmin.rateLimit.nextTokenMs).toBeGreaterThan(0);
    expect(asAdmin.rateLimit.nextTokenMs).toBeLessThanOrEqual(60_000);
    expect((await call(served.url, 'GET', `/api/jobs/${jobId}`, { scope: 'org:acme' })).body.rateLimit).toMatchObject({ key });
    expect((await call(served.url, 'GET', `/api/jobs/${jobId}`, { scope: 'org:other' })).status).toBe(404);
    const { jobId: plain } = await enqueueJob(db.prisma, { jobType: 'ops.page.plain', payload: {} });
    const unkeyed = (await call(served.url, 'GET', `/api/jobs/${plain}`)).body;
    expect([unkeyed.job.rateKey, unkeyed.rateLimit]).toEqual([null, null]);
  });
});
