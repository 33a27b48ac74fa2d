/** Fresh, unmigrated databases for migrator tests (dropped after the file). */
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { databaseUrl, dropDatabase, uniqueDatabaseName } from '../../src/testing/test-database.js';

export function useEmptyDatabases(): { create(): Promise<string> } {
  const serverUrl = inject('runledgerServerUrl');
  const created: string[] = [];
  afterAll(async () => {
    for (const name of created) await dropDatabase(serverUrl, name);
  });
  return {
    async create() {
      const name = uniqueDatabaseName('runledger_empty');
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE "${name}"`);
      } finally {
        await admin.end();
      }
      created.push(name);
      return databaseUrl(serverUrl, name);
    },
  };
}

export async function queryOnce<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}
