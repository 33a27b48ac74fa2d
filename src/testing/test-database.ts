/**
 * One migrated template database per test run; one fresh database per test
 * file, cloned from the template (a file-level copy, far faster than
 * migrating again).
 */
import pg from 'pg';
import { migrate } from '../migrate/migrate.js';

export function databaseUrl(serverUrl: string, database: string, params: Record<string, string> = {}): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe database name: ${name}`);
  return `"${name}"`;
}

async function withAdmin<R>(serverUrl: string, fn: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function uniqueDatabaseName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Creates and migrates a template database; returns its name. */
export async function createMigratedTemplate(serverUrl: string, name = uniqueDatabaseName('runledger_tpl')): Promise<string> {
  await withAdmin(serverUrl, (client) => client.query(`CREATE DATABASE ${quoteIdent(name)}`));
  await migrate({ connectionString: databaseUrl(serverUrl, name) });
  return name;
}

/** Creates a database cloned from `template`; returns its name. */
export async function cloneDatabase(serverUrl: string, template: string, name = uniqueDatabaseName('runledger_test')): Promise<string> {
  await withAdmin(serverUrl, async (client) => {
    // Two clones of one template at the same instant can see each other's
    // connection to it (SQLSTATE 55006); a short retry resolves it.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 + attempt * 20));
      }
    }
  });
  return name;
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await withAdmin(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`));
}
