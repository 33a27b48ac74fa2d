/**
 * runledger's own Prisma client, for the pool-owning conveniences (CLI, a
 * worker given a connection string, the demo). Applications normally pass
 * their own client instead; they can give it the same prepared-statement
 * naming (`preparedStatementName`) to get the same effect.
 */
import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type RunledgerPrismaClient = PrismaClient;

/**
 * Names each distinct statement (SQL text + parameter types), so `pg` prepares
 * it once per connection and PostgreSQL can reuse its plan: runledger's hot
 * statements are large CTEs whose planning otherwise costs as much as running
 * them. Pass it as `new PrismaPg({ ..., statementNameGenerator: preparedStatementName })`.
 */
export function preparedStatementName(query: { sql: string; argTypes: readonly unknown[] }): string {
  return `rl_${createHash('sha1').update(query.sql).update('\0').update(JSON.stringify(query.argTypes)).digest('hex').slice(0, 24)}`;
}

export function createPrismaClient(connectionString: string, options: { max?: number } = {}): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg({ connectionString, max: options.max ?? 10 }, { statementNameGenerator: preparedStatementName }),
  });
}
