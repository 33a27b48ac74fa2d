/**
 * Join-or-own transactions with the host application's own Prisma client
 * (generated from another schema), the READ COMMITTED guard, and the timeout
 * helpers.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  completeJob,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  getJob,
  isRunledgerError,
  listJobs,
  noOrganizationScope,
  workflow,
  type Db,
  type Tx,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { useTestDatabase } from '../harness/database.js';
import { ensureReadCommitted, setLocalLockTimeout, setLocalStatementTimeout, withTransaction } from '../../src/client/transaction.js';
import { isTransactionClient } from '../../src/client/types.js';

const db = useTestDatabase();
let host: HostPrismaClient;

beforeAll(async () => {
  const pool = db.newPool({ max: 1 });
  await pool.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
  host = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 4 }) });
});
afterAll(async () => {
  await host.$disconnect();
});

async function insertRawJob(tx: Tx, id: string): Promise<void> {
  await tx.$executeRaw`INSERT INTO runledger.job_queue (id, job_type, payload) VALUES (${id}::uuid, 'host.job', '{}'::jsonb)`;
}
async function jobExists(id: string): Promise<boolean> {
  return (await db.prisma.jobQueue.count({ where: { id } })) === 1;
}

// Compile-time proof (checked by `npm run typecheck`): the host's client and
// its transaction client are both accepted as `Db`; arbitrary objects are not.
// biome-ignore lint/suspicious/noExportsInTest: exported so the compile-time proof counts as used; vitest never calls it
export function typeProof(client: HostPrismaClient): void {
  const root: Db = client;
  void root;
  void client.$transaction(async (tx) => {
    const joined: Db = tx;
    return joined;
  });
  // @ts-expect-error a plain object is not a Prisma client
  const wrong: Db = { $queryRaw: 1 };
  void wrong;
}

describe('withTransaction', () => {
  it('tells a transaction client from a root client', async () => {
    expect(isTransactionClient(host)).toBe(false);
    expect(isTransactionClient(db.prisma)).toBe(false);
    await host.$transaction(async (tx) => {
      expect(isTransactionClient(tx)).toBe(true);
    });
  });

  it('opens its own READ COMMITTED transaction on a root client and commits it', async () => {
    const id = newId();
    const level = await withTransaction(host, 'test', async ({ tx, owned }) => {
      expect(owned).toBe(true);
      await insertRawJob(tx, id);
      const rows = await tx.$queryRaw<{ level: string }[]>`SELECT current_setting('transaction_isolation') AS level`;
      return rows[0]!.level;
    });
    expect(level).toBe('read committed');
    expect(await jobExists(id)).toBe(true);
  });

  it("joins the host's transaction: the host's rollback discards runledger's writes too", async () => {
    const jobId = newId();
    const orderId = newId();
    const failure = new Error('host business rule failed');
    const result = await host
      .$transaction(async (tx) => {
        await tx.order.create({ data: { id: orderId, customer: 'c1', total: 100 } });
        await withTransaction(tx, 'test', async ({ tx: joined, owned }) => {
          expect(owned).toBe(false);
          await insertRawJob(joined, jobId);
        });
        throw failure;
      })
      .catch((error: unknown) => error);
    expect(result).toBe(failure);
    expect(await jobExists(jobId)).toBe(false);
    expect(await host.order.count({ where: { id: orderId } })).toBe(0);
  });

  it("joins the host's transaction and leaves the commit to the host", async () => {
    const jobId = newId();
    const orderId = newId();
    await host.$transaction(async (tx) => {
      await tx.order.create({ data: { id: orderId, customer: 'c1', total: 100 } });
      await withTransaction(tx, 'test', async ({ tx: joined }) => insertRawJob(joined, jobId));
      // Not yet visible outside: runledger did not commit on its own.
      expect(await jobExists(jobId)).toBe(false);
    });
    expect(await jobExists(jobId)).toBe(true);
    expect(await host.order.count({ where: { id: orderId } })).toBe(1);
  });

  it('normalises database errors into the RunledgerError family without leaking SQL', async () => {
    const error = await withTransaction(host, 'divide', async ({ tx }) => tx.$queryRaw`SELECT 1 / 0`).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'database.error')).toBe(true);
    const e = error as { category: string; message: string; internalMessage: string; details: { sqlState: string } };
    expect(e.category).toBe('internal');
    expect(e.details.sqlState).toBe('22012');
    expect(e.message).not.toMatch(/SELECT|division/i);
    expect(e.internalMessage).toContain('divide');
    expect(e.internalMessage).toContain('22012');
  });
});

describe('a transaction client used after its transaction ended', () => {
  /** One function of each kind: owned-or-joined transaction, one statement, read, lifecycle write, workflow. */
  const calls: Record<string, (tx: Db) => Promise<unknown>> = {
    enqueueJob: (tx) => enqueueJob(tx, { jobType: 'closed.x', payload: {} }),
    'enqueueJob (keyed)': (tx) => enqueueJob(tx, { jobType: 'closed.x', payload: {}, idempotencyKey: 'closed-k' }),
    enqueueJobs: (tx) => enqueueJobs(tx, [{ jobType: 'closed.x', payload: {} }]),
    getJob: (tx) => getJob(tx, { scope: noOrganizationScope(), jobId: newId() }),
    listJobs: (tx) => listJobs(tx, { scope: noOrganizationScope() }),
    claimJobs: (tx) => claimJobs(tx, { workerId: 'w', limit: 1, leaseSeconds: 30 }),
    completeJob: (tx) => completeJob(tx, { jobId: newId(), runNumber: 1, attempt: 1, workerId: 'w' }),
    cancelJob: (tx) => cancelJob(tx, { scope: noOrganizationScope(), jobId: newId() }),
    enqueueWorkflowRun: (tx) => enqueueWorkflowRun(tx, workflow('closed.wf').job('a', 'closed.a', {}).build()),
    cancelWorkflowRun: (tx) => cancelWorkflowRun(tx, { scope: noOrganizationScope(), workflowRunId: newId() }),
  };

  it.each([
    ['committed', async () => host.$transaction(async (tx) => tx)],
    [
      'rolled back',
      async () => {
        let leaked: unknown;
        const rollback = new Error('roll back');
        await expect(
          host.$transaction(async (tx) => {
            leaked = tx;
            throw rollback;
          }),
        ).rejects.toBe(rollback);
        return leaked as Tx;
      },
    ],
  ] as const)(
    'is database.transaction_closed (validation, field db: it can never succeed) from every kind of function once %s, and writes nothing',
    async (_state, ended) => {
      const tx = (await ended()) as unknown as Db;
      const before = await db.prisma.$queryRaw<
        { n: number }[]
      >`SELECT (SELECT count(*) FROM runledger.job_queue) + (SELECT count(*) FROM runledger.workflow_runs) AS n`;
      for (const [label, call] of Object.entries(calls)) {
        const error = await call(tx).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect({
          label,
          code: (error as { code?: string })?.code,
          category: (error as { category?: string })?.category,
          field: (error as { field?: string })?.field,
        }).toEqual({
          label,
          code: 'database.transaction_closed',
          category: 'validation',
          field: 'db',
        });
        expect((error as Error).message).not.toMatch(/retry/i);
      }
      expect(await db.prisma.$queryRaw`SELECT (SELECT count(*) FROM runledger.job_queue) + (SELECT count(*) FROM runledger.workflow_runs) AS n`).toEqual(
        before,
      );
    },
  );
});

describe('ensureReadCommitted', () => {
  it.each([
    ['Serializable', false],
    ['RepeatableRead', false],
    ['ReadCommitted', true],
    ['ReadUncommitted', true],
  ] as const)('on a joined %s transaction accepts=%s, before any lock', async (isolationLevel, accepted) => {
    const outcome = await host
      .$transaction(
        async (tx) => {
          await ensureReadCommitted({ tx, owned: false }, 'workflow.cancel_unsupported_isolation', 'Test operation');
          return 'ok';
        },
        { isolationLevel },
      )
      .catch((error: unknown) => error);
    if (accepted) expect(outcome).toBe('ok');
    else {
      expect(isRunledgerError(outcome, 'workflow.cancel_unsupported_isolation')).toBe(true);
      expect((outcome as { category: string; field: string }).category).toBe('validation');
      expect((outcome as { field: string }).field).toBe('transaction.isolationLevel');
    }
  });
});

describe('timeout helpers', () => {
  it('setLocalLockTimeout turns a blocked lock into database.timeout', async () => {
    const id = newId();
    await withTransaction(host, 'seed', async ({ tx }) => insertRawJob(tx, id));
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM runledger.job_queue WHERE id = $1 FOR UPDATE', [id]);
      const error = await withTransaction(host, 'lock job', async ({ tx }) => {
        await setLocalLockTimeout(tx, 100);
        return tx.$queryRaw`SELECT 1 FROM runledger.job_queue WHERE id = ${id}::uuid FOR UPDATE`;
      }).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'database.timeout')).toBe(true);
      expect((error as { details: { sqlState: string } }).details.sqlState).toBe('55P03');
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('setLocalStatementTimeout cancels a long statement and applies only to its transaction', async () => {
    const error = await withTransaction(host, 'slow', async ({ tx }) => {
      await setLocalStatementTimeout(tx, 50);
      return tx.$queryRaw`SELECT pg_sleep(5)`;
    }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'database.timeout')).toBe(true);
    const after = await withTransaction(host, 'read', async ({ tx }) => tx.$queryRaw<{ t: string }[]>`SELECT current_setting('statement_timeout') AS t`);
    expect(after[0]!.t).toBe('0');
  });
});

describe('transactions runledger opens', () => {
  it('run at READ COMMITTED even on a client whose own default is SERIALIZABLE', async () => {
    const strict = new HostPrismaClient({
      adapter: new PrismaPg({ connectionString: db.url, max: 2 }),
      transactionOptions: { isolationLevel: 'Serializable' },
    });
    try {
      for (let i = 0; i < 2; i += 1) {
        const level = await withTransaction(strict, 'test', async ({ tx, owned }) => {
          expect(owned).toBe(true);
          const rows = await tx.$queryRaw<{ level: string }[]>`SELECT current_setting('transaction_isolation') AS level`;
          return rows[0]!.level;
        });
        expect(level).toBe('read committed');
      }
    } finally {
      await strict.$disconnect();
    }
  });
});
