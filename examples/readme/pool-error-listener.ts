import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';

// Your client: new PrismaClient({ adapter: guardedAdapter() })
export function guardedAdapter() {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
  pool.on('connect', (client) => void client.on('error', () => undefined)); // the next query reports it
  return new PrismaPg(pool, { disposeExternalPool: true });
}
