/**
 * The organization_id migration on a database that already holds rows: UUID
 * organization ids survive as their text form, and the idempotency indexes
 * (rebuilt with '' instead of the nil UUID for "no organization") keep
 * refusing duplicates both with and without an organization.
 */
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/index.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20261203000000_organization_id_text';
const ORG = '0190A3E0-0000-7000-8000-00000000000A';

describe('migration 20261203000000_organization_id_text', () => {
  it('keeps existing UUID organization ids as text and the idempotency keys unique', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    await queryOnce(
      url,
      `
      INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, idempotency_key, enqueue_request)
      VALUES (gen_random_uuid(), 'm.job', $1::uuid, '1', 'k', '{}'), (gen_random_uuid(), 'm.job', NULL, '1', 'k', '{}')`,
      [ORG],
    );
    await queryOnce(
      url,
      `
      INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, idempotency_key, enqueue_request)
      VALUES (gen_random_uuid(), 'm.run', $1::uuid, 'k', '{}')`,
      [ORG],
    );

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    const jobs = await queryOnce<{ organization_id: string | null }>(
      url,
      'SELECT organization_id FROM runledger.job_queue ORDER BY organization_id NULLS LAST',
    );
    expect(jobs.map((row) => row.organization_id)).toEqual([ORG.toLowerCase(), null]);
    const [run] = await queryOnce<{ organization_id: string }>(url, 'SELECT organization_id FROM runledger.workflow_runs');
    expect(run!.organization_id).toBe(ORG.toLowerCase());

    const duplicate = (org: string | null) =>
      queryOnce(
        url,
        `INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, idempotency_key, enqueue_request)
                      VALUES (gen_random_uuid(), 'm.job', $1, '1', 'k', '{}')`,
        [org],
      ).then(
        () => 'inserted',
        (e: { code?: string }) => e.code,
      );
    expect(await duplicate(ORG.toLowerCase())).toBe('23505');
    expect(await duplicate(null)).toBe('23505');
    expect(await duplicate('acme')).toBe('inserted');
    const types = await queryOnce<{ table_name: string; data_type: string }>(
      url,
      `
      SELECT table_name, data_type FROM information_schema.columns
       WHERE table_schema = 'runledger' AND column_name = 'organization_id' ORDER BY table_name`,
    );
    // The three tables this migration converts, and every later table's column (schedules) text too.
    expect(types).toEqual(
      expect.arrayContaining([
        { table_name: 'job_queue', data_type: 'text' },
        { table_name: 'workflow_runs', data_type: 'text' },
        { table_name: 'workflow_steps', data_type: 'text' },
      ]),
    );
    expect(types.filter((t) => t.data_type !== 'text')).toEqual([]);
  });
});
