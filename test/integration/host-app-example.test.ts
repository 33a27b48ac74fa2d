/**
 * The example host application (examples/host-app) tested the way its own
 * suite would: its own Prisma schema and client, `runledger/testing` for the
 * database and for running jobs, enqueueing inside its own transaction.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWorkflowRuns, createWorkflowRunListener, noOrganizationScope, workflowRunHandle, WORKFLOW_RUN_TERMINAL_CHANNEL } from 'runledger';
import { createTestDatabase, runUntilIdle, stopTestServer, type TestDatabase } from 'runledger/testing';
import { handlers, placeOrder } from '../../examples/host-app/order-workflow.js';
import { PrismaClient } from '../fixtures/host-app/generated/client.js';

let database: TestDatabase;
let prisma: PrismaClient;

beforeAll(async () => {
  database = await createTestDatabase();
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  await admin.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
  await admin.end();
  prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: database.url, max: 4 }) });
});

afterAll(async () => {
  await prisma?.$disconnect();
  await database?.drop();
  await stopTestServer();
});

describe('host application example', () => {
  it('rolls back the order and its workflow together, then commits and runs them to completion', async () => {
    const notifications: string[] = [];
    const listen = new pg.Client({ connectionString: database.url });
    await listen.connect();
    listen.on('notification', (message) => notifications.push(message.payload ?? ''));
    await listen.query(`LISTEN ${WORKFLOW_RUN_TERMINAL_CHANNEL}`);
    try {
      const order = { id: '0192f0c4-0000-7000-8000-000000000001', customer: 'ada', total: 4200 };
      await expect(placeOrder(prisma, order, { failAfterEnqueue: true })).rejects.toThrow('payment provider');
      expect(await prisma.order.count()).toBe(0);
      expect(await countWorkflowRuns(prisma, { scope: noOrganizationScope() })).toBe(0);
      expect(await runUntilIdle(prisma, handlers)).toMatchObject({ jobs: [], succeeded: 0 });

      const { workflowRunId } = await placeOrder(prisma, order);
      expect(await prisma.order.count()).toBe(1);
      const listener = await createWorkflowRunListener({ connectionString: database.url });
      try {
        const ran = await runUntilIdle(prisma, handlers);
        expect(ran.succeeded).toBe(3);
        expect(ran.jobs.at(-1)?.jobType).toBe('shop.ship');
        const result = await workflowRunHandle(prisma, noOrganizationScope(), workflowRunId, { listener }).getResult({ timeoutMs: 5_000 });
        expect(result).toEqual({ trackingNumber: 'TRK-0192f0c4' });
      } finally {
        await listener.close();
      }
      await listen.query('SELECT 1');
      // Exactly one notification: the committed run's; the rolled-back one sent none.
      expect(notifications.map((payload) => JSON.parse(payload))).toEqual([{ workflow_run_id: workflowRunId, status: 'SUCCEEDED' }]);
    } finally {
      await listen.end();
    }
  });
});
