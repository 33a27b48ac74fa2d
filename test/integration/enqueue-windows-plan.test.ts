/**
 * A debounce or throttle enqueue stays cheap beside many windows: with 50k keys (and their jobs), its
 * statement reads enqueue_windows and job_queue by index only, a handful of rows, whether it opens a
 * window, re-arms one or answers from one (custom and generic plans).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { enqueueWindowsStatement } from '../../src/queue/statements/enqueue-windows.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';
import { explainScans, rowsRead } from '../harness/plans.js';

const db = useTestDatabase();

beforeAll(async () => {
  // 25k debounce keys with a PENDING job each, 25k throttle keys with a finished one.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, next_run_at, finished_at, output)
    SELECT (lpad(to_hex(1700000000000 + g), 12, '0') || substr(md5('w' || g), 1, 20))::uuid, 'plan.window', '{}',
           (CASE WHEN g % 2 = 0 THEN 'PENDING' ELSE 'SUCCEEDED' END)::runledger.job_status, CASE WHEN g % 2 = 0 THEN 0 ELSE 1 END,
           now() + interval '1 hour', CASE WHEN g % 2 = 1 THEN now() END, CASE WHEN g % 2 = 1 THEN '{}'::jsonb END
      FROM generate_series(1, 50000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.enqueue_windows (job_type, organization_key, kind, window_key, job_id, opened_at, closes_at, waiting_until)
    SELECT 'plan.window', '', (CASE WHEN status = 'PENDING' THEN 'DEBOUNCE' ELSE 'THROTTLE' END)::runledger.enqueue_window_kind,
           'k' || row_number() OVER (ORDER BY id), id, now(), CASE WHEN status = 'PENDING' THEN NULL ELSE now() + interval '1 hour' END,
           CASE WHEN status = 'PENDING' THEN now() + interval '1 hour' END
      FROM runledger.job_queue WHERE job_type = 'plan.window'`;
  await db.prisma.$executeRaw`ANALYZE runledger.job_queue`;
  await db.prisma.$executeRaw`ANALYZE runledger.enqueue_windows`;
}, 120_000);

async function keyOf(kind: 'DEBOUNCE' | 'THROTTLE'): Promise<string> {
  const [row] = await db.prisma.$queryRaw<{ window_key: string }[]>`
    SELECT window_key FROM runledger.enqueue_windows WHERE kind = ${kind}::runledger.enqueue_window_kind ORDER BY window_key LIMIT 1`;
  return row!.window_key;
}

const entry = (kind: 'DEBOUNCE' | 'THROTTLE', key: string) =>
  JSON.stringify([
    {
      ord: 0,
      id: newId(),
      job_type: 'plan.window',
      payload: { v: {} },
      priority: 0,
      max_attempts: 5,
      timeout_seconds: 300,
      kind,
      window_key: key,
      window_ms: 60_000,
    },
  ]);

describe('the window statement beside 50k windows', () => {
  const cases: [string, () => Promise<string>][] = [
    ['opening a new debounce window', async () => entry('DEBOUNCE', `new-${newId()}`)],
    ['re-arming a debounce window', async () => entry('DEBOUNCE', await keyOf('DEBOUNCE'))],
    ['answering from a throttle window', async () => entry('THROTTLE', await keyOf('THROTTLE'))],
  ];
  it.each(cases)('%s reads windows and jobs by index, a few rows', async (_name, batchOf) => {
    for (const generic of [false, true]) {
      const nodes = await explainScans(db.prisma, enqueueWindowsStatement(await batchOf(), 'disabled', null, false), generic);
      const tables = nodes.filter((n) => ['job_queue', 'enqueue_windows'].includes(n['Relation Name'] ?? ''));
      expect(tables.length).toBeGreaterThan(0);
      expect(tables.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => `${n['Relation Name']} (${generic ? 'generic' : 'custom'})`)).toEqual([]);
      expect(rowsRead(tables)).toBeLessThan(20);
    }
  });
});
