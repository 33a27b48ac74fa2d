/**
 * Seeded corruption for the integrity checker's tests: writes as an operator
 * with a broken tool would, with foreign-key and constraint triggers off for
 * that one transaction, so the checker has something real to find.
 */
import { expect } from 'vitest';
import type { IntegrityViolation } from '../../src/index.js';
import type { TestDatabase } from './database.js';

/** `corrupt(sql, params)` on `db`: one transaction with `session_replication_role = replica`; the statement must change a row. */
export function corrupter(db: TestDatabase): (sql: string, params?: unknown[]) => Promise<void> {
  return async (sql, params = []) => {
    const client = await db.newPool({ max: 1 }).connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL session_replication_role = replica');
      const result = await client.query(sql, params);
      expect(result.rowCount).toBeGreaterThan(0);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  };
}

/** The violations of one kind. */
export const only = (violations: IntegrityViolation[], kind: string): IntegrityViolation[] => violations.filter((v) => v.kind === kind);
