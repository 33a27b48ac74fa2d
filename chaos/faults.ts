/**
 * Database faults, done by the controller as superuser on the chaos
 * database: terminating some of the chaos role's backends mid-flight, and
 * outages (CONNECTION LIMIT 0 plus terminating every chaos backend, so
 * nothing of the role can connect for a few seconds, then back).
 */
import type pg from 'pg';
import type { ChaosDatabase } from './database.js';
import type { ChaosStats } from './stats.js';

export async function terminateSomeBackends(admin: pg.Pool, db: ChaosDatabase, stats: ChaosStats): Promise<void> {
  const { rows } = await admin.query<{ n: number }>(
    `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
       FROM pg_stat_activity
      WHERE datname = $1 AND usename = $2 AND pid <> pg_backend_pid() AND random() < 0.3`,
    [db.name, db.canRefuseConnections ? db.role : '-'],
  );
  stats.faults.backendTerminations += 1;
  stats.faults.backendsTerminated += rows[0]?.n ?? 0;
}

export async function outage(admin: pg.Pool, db: ChaosDatabase, stats: ChaosStats, ms: number): Promise<void> {
  if (!db.canRefuseConnections) return;
  const started = Date.now();
  await admin.query(`ALTER DATABASE "${db.name}" CONNECTION LIMIT 0`);
  try {
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND usename = $2', [db.name, db.role]);
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    await admin.query(`ALTER DATABASE "${db.name}" CONNECTION LIMIT -1`);
  }
  stats.faults.outages += 1;
  stats.faults.outageMs += Date.now() - started;
}
