/**
 * runledger's own Prisma client, for the pool-owning conveniences (CLI, a
 * worker given a connection string, the demo). Applications normally pass
 * their own client instead.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type RunledgerPrismaClient = PrismaClient;

export function createPrismaClient(connectionString: string, options: { max?: number } = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString, max: options.max ?? 10 }) });
}
