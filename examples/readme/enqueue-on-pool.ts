import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { enqueueJob, poolDb } from 'runledger';
import { PrismaClient } from './generated/prisma/client.js'; // your generated client

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
export const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
// One client per pool (calling poolDb(pool) again returns it). Behind PgBouncer < 1.21:
// poolDb(pool, { preparedStatements: false }).
export const jobs = poolDb(pool);

export async function sendWelcome(to: string) {
  // On its own: one autocommit statement straight to pg, without Prisma's query layer.
  await enqueueJob(jobs, { jobType: 'email.send', payload: { to } });
}

export async function signUp(email: string) {
  // With your own writes: your Prisma transaction client, so the job commits with them.
  await prisma.$transaction(async (tx) => {
    await tx.order.create({ data: { id: crypto.randomUUID(), customer: email, total: 0 } });
    await enqueueJob(tx, { jobType: 'email.send', payload: { to: email } });
  });
}
