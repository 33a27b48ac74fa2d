import { migrate } from 'runledger';

export async function migrateAtStartUp() {
  await migrate({ connectionString: process.env.DATABASE_URL! });
}
