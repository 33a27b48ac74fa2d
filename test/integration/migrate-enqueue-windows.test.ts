/**
 * The enqueue-windows migration on a database that already holds jobs: it adds the window table and the
 * trigger that deletes a job's window with the job (and skips a window another transaction holds, so a
 * purge never waits).
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20270101000001_enqueue_windows';

describe(`migration ${MIGRATION}`, () => {
  it('adds enqueue_windows, whose rows go with their jobs', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    const [a, b, c] = [newId(), newId(), newId()];
    await queryOnce(url, `INSERT INTO runledger.job_queue (id, job_type, payload) VALUES ($1, 'm.win', '{}'), ($2, 'm.win', '{}'), ($3, 'm.win', '{}')`, [
      a,
      b,
      c,
    ]);

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    await queryOnce(
      url,
      `INSERT INTO runledger.enqueue_windows (job_type, organization_key, kind, window_key, job_id, opened_at, closes_at, waiting_until)
       VALUES ('m.win', '', 'DEBOUNCE', 'a', $1, now(), NULL, now()), ('m.win', 'org', 'THROTTLE', 'b', $2, now(), now(), NULL),
              ('m.win', '', 'THROTTLE', 'c', $3, now(), now(), NULL)`,
      [a, b, c],
    );
    // A throttle row always has its end.
    const bad = await queryOnce(
      url,
      `INSERT INTO runledger.enqueue_windows (job_type, organization_key, kind, window_key, job_id, opened_at) VALUES ('m.win', '', 'THROTTLE', 'x', $1, now())`,
      [a],
    ).then(
      () => 'inserted',
      (e: { code?: string }) => e.code,
    );
    expect(bad).toBe('23514');

    // Another transaction holds c's window: the delete skips it rather than wait.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM runledger.enqueue_windows WHERE window_key = 'c' FOR UPDATE`);
      await queryOnce(url, 'DELETE FROM runledger.job_queue WHERE id = ANY($1::uuid[])', [[a, b, c]]);
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }
    const left = await queryOnce<{ window_key: string }>(url, 'SELECT window_key FROM runledger.enqueue_windows ORDER BY window_key');
    expect(left.map((row) => row.window_key)).toEqual(['c']);
  });
});
