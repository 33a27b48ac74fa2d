/**
 * The enqueue-intent key migration on a database that already holds intents
 * recorded twice under one key (possible before recording was idempotent):
 * the first of each key stays, the later ones go, and the new unique index
 * then refuses a duplicate with and without an organization.
 */
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20261221000000_enqueue_intent_keys';

describe(`migration ${MIGRATION}`, () => {
  it('keeps the first intent of each key recorded twice, then refuses duplicates', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    // UUIDv7 ids in recording order: first, then the duplicates of the same key (another request, the same one).
    const ids = [newId(), newId(), newId(), newId(), newId()];
    await queryOnce(
      url,
      `
      INSERT INTO runledger.job_enqueue_intents (id, job_type, organization_id, idempotency_key, payload)
      VALUES ($1, 'm.intent', NULL, 'k', '{"n":1}'), ($2, 'm.intent', NULL, 'k', '{"n":2}'), ($3, 'm.intent', NULL, 'k', '{"n":1}'),
             ($4, 'm.intent', 'acme', 'k', '{"n":1}'), ($5, 'm.intent', NULL, 'other', '{"n":1}')`,
      ids,
    );

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    const kept = await queryOnce<{ id: string }>(url, 'SELECT id FROM runledger.job_enqueue_intents ORDER BY id');
    expect(kept.map((row) => row.id)).toEqual([ids[0], ids[3], ids[4]]);
    const duplicate = (org: string | null) =>
      queryOnce(
        url,
        `INSERT INTO runledger.job_enqueue_intents (id, job_type, organization_id, idempotency_key, payload)
                      VALUES ($1, 'm.intent', $2, 'k', '{}')`,
        [newId(), org],
      ).then(
        () => 'inserted',
        (e: { code?: string }) => e.code,
      );
    expect(await duplicate(null)).toBe('23505');
    expect(await duplicate('acme')).toBe('23505');
    expect(await duplicate('globex')).toBe('inserted');
  });
});
