/**
 * A database runledger was never migrated on (no `runledger` schema), or one
 * whose schema lacks runledger's tables, answers `migrate.required` ("run
 * migrate()") from every kind of public function and from the CLI, instead
 * of `database.error` with SQLSTATE 42P01/3F000/42883 (a claim meets its fairness
 * function first); a host's own missing table
 * stays `database.error`. Once migrated, the same client works.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaClient } from '../../src/client/connect.js';
import { withTransaction } from '../../src/client/transaction.js';
import { newId } from '../../src/db/ids.js';
import {
  claimJobs,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  getJob,
  getQueueMetrics,
  listJobs,
  listWorkflowRuns,
  noOrganizationScope,
  workflow,
  type Db,
} from '../../src/index.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { queryOnce, useEmptyDatabases } from '../harness/empty-database.js';
import { runCli } from '../harness/cli.js';
import { runledgerErrorOf as failure } from '../harness/errors.js';

const databases = useEmptyDatabases();
const clients: PrismaClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((client) => client.$disconnect()));
});

const CALLS: Record<string, (db: Db) => Promise<unknown>> = {
  enqueueJob: (c) => enqueueJob(c, { jobType: 'unmigrated.x', payload: {} }),
  'enqueueJob (keyed)': (c) => enqueueJob(c, { jobType: 'unmigrated.x', payload: {}, idempotencyKey: 'k' }),
  enqueueJobs: (c) => enqueueJobs(c, [{ jobType: 'unmigrated.x', payload: {} }]),
  getJob: (c) => getJob(c, { scope: noOrganizationScope(), jobId: newId() }),
  listJobs: (c) => listJobs(c, { scope: noOrganizationScope() }),
  claimJobs: (c) => claimJobs(c, { workerId: 'w', limit: 1, leaseSeconds: 30 }),
  enqueueWorkflowRun: (c) => enqueueWorkflowRun(c, workflow('unmigrated.wf').job('a', 'unmigrated.a', {}).build()),
  listWorkflowRuns: (c) => listWorkflowRuns(c, { scope: noOrganizationScope() }),
  getQueueMetrics: (c) => getQueueMetrics(c, { scope: noOrganizationScope() }),
};

describe.each([
  ['never migrated (no runledger schema)', async (_url: string) => undefined],
  ['with an empty runledger schema (its tables missing)', async (url: string) => void (await queryOnce(url, 'CREATE SCHEMA runledger'))],
])('a database %s', (_name, prepare) => {
  let url: string;
  let client: PrismaClient;
  beforeAll(async () => {
    url = await databases.create();
    await prepare(url);
    client = createPrismaClient(url, { max: 2 });
    clients.push(client);
  });

  it('answers migrate.required from every kind of public function, naming migrate() and no SQL', async () => {
    for (const [label, call] of Object.entries(CALLS)) {
      const error = await failure(call(client));
      expect({ label, code: error.code, category: error.category }).toEqual({ label, code: 'migrate.required', category: 'internal' });
      expect(error.message).toContain('migrate()');
      expect(error.message).not.toMatch(/select|insert|relation|runledger\./i);
      expect(['42P01', '3F000', '42704', '42883']).toContain(error.details.sqlState);
    }
  });

  it('answers migrate.required from the CLI, with stdout empty', async () => {
    const result = await runCli(url, '--json', 'runs', 'list');
    expect([result.code, result.stdout, JSON.parse(result.stderr).code]).toEqual([1, '', 'migrate.required']);
  });

  it("leaves a host's own missing table a database.error", async () => {
    const error = await failure(withTransaction(client, 'host read', async ({ tx }) => tx.$queryRaw`SELECT * FROM public.orders_missing`));
    expect({ code: error.code, sqlState: error.details.sqlState }).toEqual({ code: 'database.error', sqlState: '42P01' });
  });
});

describe('after migrate()', () => {
  it('the same client that was told to migrate works', async () => {
    const url = await databases.create();
    const client = createPrismaClient(url, { max: 2 });
    clients.push(client);
    expect((await failure(enqueueJob(client, { jobType: 'unmigrated.x', payload: {} }))).code).toBe('migrate.required');
    expect((await runCli(url, 'migrate')).code).toBe(0);
    const { jobId } = await enqueueJob(client, { jobType: 'unmigrated.x', payload: {} });
    expect(await getJob(client, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'PENDING' });
  });
});
