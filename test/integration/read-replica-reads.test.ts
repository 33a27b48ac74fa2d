/**
 * docs/scaling.md sends the dashboard's reads (`readDb`) and `getQueueMetrics`
 * to a read replica by giving them a client on it. A second client whose every
 * transaction is read only (`default_transaction_read_only`, what a hot
 * standby enforces) stands in for the replica: what runs on it writes
 * nothing, and a write on it is refused, so the stand-in is one.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPrismaClient } from '../../src/client/connect.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import {
  adminScope,
  createDashboard,
  enqueueJob,
  enqueueWorkflowRun,
  getJob,
  getQueueMetrics,
  isRunledgerError,
  listJobEvents,
  listJobs,
  listWorkflowRuns,
  listWorkflowSteps,
  verifyIntegrity,
  workflow,
} from '../../src/index.js';
import { cloneDatabase, databaseUrl, dropDatabase } from '../../src/testing/test-database.js';
import { useTestDatabase } from '../harness/database.js';
import { dashboardSession, serveDashboard, SCOPE_HEADER } from '../harness/dashboard.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let replica: PrismaClient;
let jobId = '';
let runId = '';

beforeAll(async () => {
  jobId = (await enqueueJob(db.prisma, { jobType: 'replica.mail', payload: { n: 1 }, organizationId: 'org-r' })).jobId;
  runId = (
    await enqueueWorkflowRun(db.prisma, workflow('replica.flow').job('a', 'replica.step', {}).job('b', 'replica.step', {}).afterSuccess('b', ['a']).build())
  ).workflowRunId;
  await runRunnableJobs(db.prisma, (job) => (job.jobType === 'replica.mail' ? { ok: false } : { ok: true, output: { done: true } }));
  replica = createPrismaClient(databaseUrl(db.url, db.name, { options: '-c default_transaction_read_only=on' }), { max: 2 });
});

// Registered after useTestDatabase's, so it runs before its leak check.
afterAll(() => replica?.$disconnect());

describe('reads that tolerate lag, on a read-only client', () => {
  it('refuses a write on the stand-in (so it is one)', async () => {
    const error = await enqueueJob(replica, { jobType: 'replica.mail', payload: {} }).catch((e: unknown) => e);
    expect(isRunledgerError(error)).toBe(true);
    expect(await replica.$queryRaw<{ ro: string }[]>`SELECT current_setting('transaction_read_only') AS ro`).toEqual([{ ro: 'on' }]);
  });

  it('answers getQueueMetrics, the reads and the integrity check as the primary does', async () => {
    const scope = adminScope();
    const now = new Date();
    const onReplica = await getQueueMetrics(replica, { scope, now });
    const onPrimary = await getQueueMetrics(db.prisma, { scope, now });
    expect(onReplica).toEqual(onPrimary);
    expect(onReplica.byType.map((t) => t.jobType).sort()).toEqual(['replica.mail', 'replica.step']);
    expect(await getJob(replica, { scope, jobId })).toEqual(await getJob(db.prisma, { scope, jobId }));
    expect((await listJobs(replica, { scope, limit: 10 })).items).toHaveLength(3);
    expect((await listJobEvents(replica, { scope, jobId })).items.length).toBeGreaterThan(1);
    expect((await listWorkflowRuns(replica, { scope, limit: 10 })).items.map((r) => [r.id, r.status])).toEqual([[runId, 'SUCCEEDED']]);
    expect((await listWorkflowSteps(replica, { scope, workflowRunId: runId, limit: 10 })).items).toHaveLength(2);
    expect((await verifyIntegrity(replica, { pageSize: 100 })).clean).toBe(true);
  });

  it('with readDb, reads pages from the second client and acts on db', async () => {
    // The "replica" is another database here, holding a job the primary lacks, so an answer shows where it was read.
    const replicaName = await cloneDatabase(inject('runledgerServerUrl'), inject('runledgerTemplate'));
    const writer = createPrismaClient(databaseUrl(db.url, replicaName), { max: 1 });
    const reader = createPrismaClient(databaseUrl(db.url, replicaName, { options: '-c default_transaction_read_only=on' }), { max: 2 });
    try {
      const onlyThere = (await enqueueJob(writer, { jobType: 'replica.only', payload: {} })).jobId;
      const onlyHere = (await enqueueJob(db.prisma, { jobType: 'replica.primary', payload: {} })).jobId;
      const served = await serveDashboard(db.prisma, { readDb: reader });
      const get = (path: string) => fetch(`${served.url}${path}`, { headers: { [SCOPE_HEADER]: 'admin' } });
      expect((await get(`/api/jobs/${onlyThere}`)).status).toBe(200);
      expect((await get(`/api/jobs/${onlyHere}`)).status).toBe(404);
      const overview: unknown = await (await get('/api/overview')).json();
      expect(JSON.stringify(overview)).toContain('replica.only');
      expect(JSON.stringify(overview)).not.toContain('replica.primary');

      const session = await dashboardSession(served.url);
      const cancel = await fetch(`${served.url}/api/jobs/${onlyHere}/cancel`, {
        method: 'POST',
        headers: { [SCOPE_HEADER]: 'admin', cookie: session.cookie, 'x-runledger-csrf': session.token, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'acted on the primary' }),
      });
      expect(cancel.status).toBe(200);
      expect((await getJob(db.prisma, { scope: adminScope(), jobId: onlyHere })).status).toBe('CANCELED');
      await served.close();
    } finally {
      await writer.$disconnect();
      await reader.$disconnect();
      await dropDatabase(inject('runledgerServerUrl'), replicaName);
    }
  });

  it('refuses a readDb that is not a client, naming it', () => {
    expect(() => createDashboard({ db: db.prisma, readDb: {} as never, authorize: () => adminScope() })).toThrow(
      expect.objectContaining({ code: 'dashboard.invalid_options', field: 'readDb' }),
    );
  });

  it("serves a read-only dashboard's pages from the stand-in", async () => {
    const served = await serveDashboard(replica, { readOnly: true });
    for (const path of ['/api/overview', '/api/jobs', `/api/jobs/${jobId}`, '/api/runs', `/api/runs/${runId}`]) {
      const response = await fetch(`${served.url}${path}`, { headers: { [SCOPE_HEADER]: 'admin' } });
      expect([path, response.status]).toEqual([path, 200]);
      await response.arrayBuffer();
    }
  });
});
