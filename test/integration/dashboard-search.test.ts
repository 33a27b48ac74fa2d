/**
 * The dashboard's search box over real HTTP and a real database: an id prefix
 * lists exactly the rows whose id starts with it (all pages, compared with the
 * table), a key substring the rows whose key contains it in any case, within
 * the newest KEY_SEARCH_WINDOW rows in scope, and the exact key at any age when
 * the type is given. Bad searches are coded errors naming the field.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { enqueueJob, enqueueWorkflowRun, workflow } from '../../src/index.js';
import { KEY_SEARCH_WINDOW } from '../../src/dashboard/search.js';
import { useTestDatabase } from '../harness/database.js';
import { SCOPE_HEADER, serveDashboard } from '../harness/dashboard.js';

const db = useTestDatabase();
let base: string;

async function get(path: string, scope = 'admin'): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, { headers: { [SCOPE_HEADER]: scope } });
  return { status: response.status, body: await response.json() };
}

/** Every page of a search, following nextCursor. */
async function allPages(path: string, scope = 'admin'): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await get(`${path}${cursor ? `&cursor=${cursor}` : ''}`, scope);
    expect(page.status).toBe(200);
    ids.push(...page.body.items.map((item: { id: string }) => item.id));
    cursor = page.body.nextCursor;
  } while (cursor);
  return ids;
}

let oldKeyed: string;

beforeAll(async () => {
  oldKeyed = (await enqueueJob(db.prisma, { jobType: 'search.old', payload: {}, organizationId: 'org-a', idempotencyKey: 'Ancient-Key-7' })).jobId;
  for (const [org, key] of [
    ['org-a', 'Invoice-2026-A1'],
    ['org-b', 'invoice-2026-b7'],
    ['org-a', 'receipt-9'],
    [null, 'INVOICE-2026-none'],
  ] as const) {
    await enqueueJob(db.prisma, { jobType: 'search.mail', payload: {}, idempotencyKey: key, ...(org ? { organizationId: org } : {}) });
  }
  for (let n = 0; n < 7; n += 1) await enqueueJob(db.prisma, { jobType: 'search.plain', payload: { n }, organizationId: n % 2 ? 'org-a' : 'org-b' });
  for (const [org, key] of [
    ['org-a', 'Order-77-a'],
    ['org-b', 'order-77-b'],
  ] as const) {
    await enqueueWorkflowRun(db.prisma, workflow('search.flow').organization(org).idempotencyKey(key).job('only', 'search.step', {}).build());
  }
  base = (await serveDashboard(db.prisma)).url;
});

describe('dashboard search: id prefix', () => {
  it('lists every job whose id starts with the prefix, on keyset pages, in scope only', async () => {
    const [row] = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM runledger.job_queue WHERE job_type = 'search.plain' LIMIT 1`;
    const id = row!.id;
    // UUIDv7: the first 8 hex digits are the high bits of the creation time, shared by jobs made moments apart.
    const prefix = id.slice(0, 8);
    for (const [header, org] of [
      ['admin', null],
      ['org:org-a', 'org-a'],
      ['org:org-b', 'org-b'],
    ] as const) {
      const expected = await db.prisma.$queryRaw<{ id: string }[]>`
        SELECT id::text FROM runledger.job_queue
         WHERE id::text LIKE ${`${prefix}%`} AND (${org}::text IS NULL OR organization_id = ${org}::text) ORDER BY id DESC`;
      expect(expected.length).toBeGreaterThan(2);
      expect(await allPages(`/api/jobs?q=${prefix}&limit=2`, header)).toEqual(expected.map((row) => row.id));
    }
    // Dashes and case do not matter; a whole id finds that job.
    const dashed = await get(`/api/jobs?q=${id.slice(0, 13).toUpperCase()}`);
    expect(dashed.body.items.every((job: { id: string }) => job.id.startsWith(id.slice(0, 13)))).toBe(true);
    expect(dashed.body.search).toEqual({ kind: 'id_prefix', prefix: id.slice(0, 13).replace('-', '') });
    expect((await get(`/api/jobs?q=${id}`)).body.items.map((job: { id: string }) => job.id)).toEqual([id]);
  });

  it("never finds another organization's job or run by its id", async () => {
    const [job] = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM runledger.job_queue WHERE organization_id = 'org-b' LIMIT 1`;
    const [run] = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM runledger.workflow_runs WHERE organization_id = 'org-b' LIMIT 1`;
    expect((await get(`/api/jobs?q=${job!.id}`, 'org:org-b')).body.items).toHaveLength(1);
    expect((await get(`/api/runs?q=${run!.id}`, 'org:org-b')).body.items).toHaveLength(1);
    for (const scope of ['org:org-a', 'no-org']) {
      expect((await get(`/api/jobs?q=${job!.id}`, scope)).body.items).toEqual([]);
      expect((await get(`/api/runs?q=${run!.id}`, scope)).body.items).toEqual([]);
      const prefixed = await get(`/api/jobs?q=${job!.id.slice(0, 6)}&limit=500`, scope);
      expect(prefixed.body.items.some((item: { organizationId: string | null }) => item.organizationId === 'org-b')).toBe(false);
    }
    // An organization filtering by another organization gets nothing either, and the answer still says what was searched.
    const narrowed = await get(`/api/jobs?q=${job!.id}&org=org-b`, 'org:org-a');
    expect([narrowed.body.items, narrowed.body.search.kind]).toEqual([[], 'id_prefix']);
  });
});

describe('dashboard search: idempotency key substring', () => {
  it('finds jobs and runs whose key contains the text in any case, in scope only', async () => {
    const keysOf = (body: any) => body.items.map((item: { idempotencyKey: string }) => item.idempotencyKey).sort();
    const admin = await get('/api/jobs?q=invoice-2026');
    expect(keysOf(admin.body)).toEqual(['INVOICE-2026-none', 'Invoice-2026-A1', 'invoice-2026-b7']);
    expect(admin.body.search).toEqual({
      kind: 'key_substring',
      text: 'invoice-2026',
      caseSensitive: false,
      searchedNewest: KEY_SEARCH_WINDOW,
      exactKeyAnyAge: false,
    });
    expect(keysOf((await get('/api/jobs?q=invoice-2026', 'org:org-a')).body)).toEqual(['Invoice-2026-A1']);
    expect(keysOf((await get('/api/jobs?q=invoice-2026', 'org:org-b')).body)).toEqual(['invoice-2026-b7']);
    expect(keysOf((await get('/api/jobs?q=invoice-2026', 'no-org')).body)).toEqual(['INVOICE-2026-none']);
    expect(keysOf((await get('/api/jobs?q=receipt', 'org:org-b')).body)).toEqual([]);
    // Filters still apply to the matches; `key:` searches keys with a text that looks like hex.
    expect(keysOf((await get('/api/jobs?q=invoice&status=LEASED')).body)).toEqual([]);
    expect((await get('/api/jobs?q=key:2026')).body.items).toHaveLength(3);

    expect((await get('/api/runs?q=ORDER-77')).body.items.map((run: { organizationId: string }) => run.organizationId).sort()).toEqual(['org-a', 'org-b']);
    expect((await get('/api/runs?q=ORDER-77', 'org:org-a')).body.items.map((run: { idempotencyKey: string }) => run.idempotencyKey)).toEqual(['Order-77-a']);
    expect((await get('/api/runs?q=order-77-b', 'org:org-a')).body.items).toEqual([]);
  });

  it('searches the newest rows in scope only, but finds the exact key at any age when the type is given', async () => {
    // Push the old keyed job out of the window: KEY_SEARCH_WINDOW newer jobs in its organization.
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, organization_id, payload)
      SELECT (substr(md5(g::text), 1, 8) || '-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'search.filler', 'org-a', '{}'
        FROM generate_series(1, ${KEY_SEARCH_WINDOW}::int) g`;
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET id = '00000000-0000-7000-8000-000000000001' WHERE id = ${oldKeyed}::uuid`;
    expect((await get('/api/jobs?q=ancient-key', 'org:org-a')).body.items).toEqual([]);
    expect((await get('/api/jobs?q=Ancient-Key-7', 'org:org-a')).body.items).toEqual([]);
    const exact = await get('/api/jobs?q=Ancient-Key-7&type=search.old', 'org:org-a');
    expect(exact.body.items.map((job: { idempotencyKey: string }) => job.idempotencyKey)).toEqual(['Ancient-Key-7']);
    expect(exact.body.search.exactKeyAnyAge).toBe(true);
    expect((await get('/api/jobs?q=Ancient-Key-7&type=search.old', 'org:org-b')).body.items).toEqual([]);
    // Another organization's window is its own: org-b's keys are still within its newest rows.
    expect((await get('/api/jobs?q=invoice', 'org:org-b')).body.items).toHaveLength(1);
  });
});

describe('dashboard search: bad input', () => {
  it('answers every read parameter with a hostile value with 200 or a coded 4xx, never 500', async () => {
    const hostile = [
      '%00',
      'a%00b',
      '%ED%A0%80',
      '%EF%BF%BD',
      encodeURIComponent("'; DROP TABLE runledger.job_queue; --"),
      '%25_%25',
      'x'.repeat(10_000),
      '%20',
      'NaN',
      '-1',
      '1e3',
      '00000000-0000-0000-0000-000000000000',
    ];
    const params = ['q', 'type', 'status', 'org', 'withoutOrg', 'cursor', 'limit', 'id', 'key'];
    const routes = [
      '/api/jobs?',
      '/api/jobs?q=abcd&',
      '/api/jobs?type=search.mail&',
      '/api/runs?',
      '/api/runs?q=abcd&',
      `/api/jobs/${oldKeyed}/attempts?`,
      '/api/events?',
    ];
    for (const route of routes) {
      for (const param of [...params, 'run']) {
        for (const value of hostile) {
          const response = await fetch(`${base}${route}${param}=${value}`, {
            method: route.includes('events') ? 'HEAD' : 'GET',
            headers: { [SCOPE_HEADER]: 'org-a' },
          });
          const body = route.includes('events') ? null : ((await response.json()) as { error?: { code: string } });
          expect([route, param, value.slice(0, 20), response.status < 500]).toEqual([route, param, value.slice(0, 20), true]);
          if (body && response.status >= 400) expect(body.error?.code).toMatch(/^[a-z]+\.[a-z_]+$/);
        }
      }
    }
  }, 120_000);

  it('reads withoutOrg=1 and withoutOrg=true as rows without an organization, 0 and false as no filter', async () => {
    const without = (await get('/api/jobs?type=search.mail&withoutOrg=true')).body.items.map((job: { organizationId: string | null }) => job.organizationId);
    expect(without).toEqual([null]);
    expect((await get('/api/jobs?type=search.mail&withoutOrg=1')).body.items).toHaveLength(1);
    expect((await get('/api/jobs?type=search.mail&withoutOrg=false')).body.items).toHaveLength(4);
    expect((await get('/api/jobs?type=search.mail&withoutOrg=0')).body.items).toHaveLength(4);
  });

  it('refuses a bad search with a coded error naming the field', async () => {
    const cases: [string, string][] = [
      ['/api/jobs?q=id:xyz', 'q'],
      ['/api/jobs?q=id:abc', 'q'],
      [`/api/jobs?q=${'x'.repeat(600)}`, 'q'],
      ['/api/jobs?q=abcd&cursor=nope', 'cursor'],
      ['/api/jobs?q=abcd&status=NOPE', 'status.0'],
      ['/api/runs?q=abcd&status=PENDING', 'status.0'],
      ['/api/runs?q=abcd&limit=501', 'limit'],
      // Text PostgreSQL cannot take answered 500 (the statement failed); an over-long value was sent as is.
      ['/api/jobs?q=%00', 'q'],
      ['/api/runs?q=a%00b', 'q'],
      ['/api/jobs?q=abcd&type=a%00', 'type'],
      ['/api/runs?q=abcd&type=a%00', 'type'],
      [`/api/jobs?q=abcd&type=${'t'.repeat(201)}`, 'type'],
      [`/api/runs?type=${'t'.repeat(201)}`, 'type'],
      ['/api/jobs?type=search.mail&key=k%00', 'key'],
      [`/api/jobs?type=search.mail&key=${'k'.repeat(513)}`, 'key'],
      ['/api/jobs?org=o%00', 'org'],
      ['/api/jobs?q=abcd&org=o%00', 'org'],
      [`/api/jobs?org=${'o'.repeat(256)}`, 'org'],
      ['/api/jobs?cursor=%00', 'cursor'],
      ['/api/jobs?status=%00', 'status'],
      ['/api/jobs?id=%00', 'id'],
      // Only 1/true (or 0/false) is a flag; "maybe" was read as false.
      ['/api/jobs?withoutOrg=maybe', 'withoutOrg'],
      ['/api/jobs?withoutOrg=', 'withoutOrg'],
    ];
    for (const [path, field] of cases) {
      const answer = await get(path);
      expect([path, answer.status, answer.body.error.code, answer.body.error.details.field]).toEqual([path, 400, 'dashboard.invalid_input', field]);
      expect(JSON.stringify(answer.body)).not.toMatch(/select|where|runledger\./i);
    }
  });
});
