/**
 * The concurrency-seats migration on a database with keyed leases in flight: each live lease takes a seat of its
 * key, the rest of the key's seats up to its limit are free (more seats than the limit when a lowered limit left
 * more leases than it allows), and the counters it replaces are gone. Claims and the reaper then keep the seats.
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, migrate, reapExpiredLeases, verifyIntegrity } from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { newId } from '../../src/db/ids.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20270101000006_concurrency_seats';

describe(`migration ${MIGRATION}`, () => {
  it('seats the live keyed leases, frees the rest of each key, and claims and the reaper go on from there', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    // Key a: limit 3, two live leases (5 taken, 3 released). Key b: limit lowered to 1 under two live leases,
    // run out. Key c: limit 2, nothing leased, two jobs waiting.
    await queryOnce(url, `INSERT INTO runledger.concurrency_limits (key, max_leased, taken) VALUES ('m.a', 3, 5), ('m.b', 1, 2), ('m.c', 2, 0)`);
    await queryOnce(url, `INSERT INTO runledger.concurrency_releases (key, released) VALUES ('m.a', 3)`);
    const leased = [
      { id: newId(), key: 'm.a', expiry: "now() + interval '1 minute'" },
      { id: newId(), key: 'm.a', expiry: "now() + interval '2 minutes'" },
      { id: newId(), key: 'm.b', expiry: "now() - interval '1 minute'" },
      { id: newId(), key: 'm.b', expiry: "now() - interval '2 minutes'" },
    ];
    for (const job of leased) {
      await queryOnce(
        url,
        `WITH j AS (
           INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, started_at, concurrency_key)
           VALUES ($1, 'm.keyed', '{}', 'LEASED', 1, 'w', ${job.expiry}, now(), $2) RETURNING id, lease_expires_at, concurrency_key)
         INSERT INTO runledger.job_leases (expires_at, job_id, concurrency_key) SELECT lease_expires_at, id, concurrency_key FROM j`,
        [job.id, job.key],
      );
    }
    await queryOnce(
      url,
      `INSERT INTO runledger.job_queue (id, job_type, payload, concurrency_key) VALUES ($1, 'm.waiting', '{}', 'm.c'), ($2, 'm.waiting', '{}', 'm.c')`,
      [newId(), newId()],
    );

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    const seats = await queryOnce<{ key: string; seats: number; free: number[] }>(
      url,
      `SELECT k.key, k.seats, COALESCE(array_agg(s.seat ORDER BY s.seat) FILTER (WHERE s.seat IS NOT NULL), '{}') AS free
         FROM runledger.concurrency_limits k LEFT JOIN runledger.concurrency_seats s ON s.key = k.key
        GROUP BY k.key, k.seats ORDER BY k.key`,
    );
    expect(seats).toEqual([
      { key: 'm.a', seats: 3, free: [3] },
      { key: 'm.b', seats: 2, free: [] },
      { key: 'm.c', seats: 2, free: [1, 2] },
    ]);
    const held = await queryOnce<{ job_id: string; concurrency_seat: number }>(
      url,
      'SELECT job_id, concurrency_seat FROM runledger.job_leases ORDER BY concurrency_key, expires_at',
    );
    expect(held.map((row) => row.concurrency_seat)).toEqual([1, 2, 1, 2]);
    const slots = await queryOnce<{ key: string; leased: number }>(url, 'SELECT key, leased FROM runledger.concurrency_slots ORDER BY key');
    expect(slots).toEqual([
      { key: 'm.a', leased: 2 },
      { key: 'm.b', leased: 2 },
      { key: 'm.c', leased: 0 },
    ]);
    const gone = await queryOnce<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'runledger' AND table_name = 'concurrency_releases'`,
    );
    expect(gone).toEqual([{ n: 0 }]);

    const prisma = createPrismaClient(url, { max: 2 });
    try {
      const seatViolations = async () => (await verifyIntegrity(prisma, {})).violations.filter((v) => v.kind === 'concurrency.leased_count');
      expect(await seatViolations()).toEqual([]);
      // c's two jobs take its two seats; the reaper gives b's seats back, of which its limit of 1 allows one.
      const claimed = await claimJobs(prisma, { workerId: 'w2', jobTypes: ['m.waiting'], limit: 5, leaseSeconds: 60 });
      expect(claimed).toHaveLength(2);
      expect((await reapExpiredLeases(prisma, { limit: 10 })).retried).toHaveLength(2);
      const afterReap = await queryOnce<{ key: string; seat: number }>(
        url,
        `SELECT key, seat FROM runledger.concurrency_seats WHERE key IN ('m.b', 'm.c') ORDER BY key, seat`,
      );
      expect(afterReap).toEqual([
        { key: 'm.b', seat: 1 },
        { key: 'm.b', seat: 2 },
      ]);
      expect(await seatViolations()).toEqual([]);
    } finally {
      await prisma.$disconnect();
    }
  });
});
