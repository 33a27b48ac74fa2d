/**
 * Something that is not a Prisma client as `db` (`{}`, undefined, null, a
 * string, an object whose `$queryRaw` is not a function) is a coded
 * ValidationError naming `db` from every public operation, never the
 * TypeError its first use would throw.
 */
import { describe, expect, it } from 'vitest';
import {
  adminScope,
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  compareAndReplaySucceededJob,
  compareAndRequeueJob,
  completeExternalWorkflowStep,
  completeJob,
  completeJobs,
  countWorkflowRuns,
  createWorker,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  enqueueWorkflowRunHandle,
  failJob,
  findJob,
  findWorkflowRun,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  heartbeatJob,
  listJobEvents,
  listJobs,
  listWorkflowRuns,
  listWorkflowStepDependencies,
  listWorkflowSteps,
  markJobRunning,
  reapExpiredLeases,
  releaseJob,
  ValidationError,
  workflow,
  workflowRunHandle,
  type Db,
} from '../../src/index.js';
import type { PrismaClientLike } from '../../src/client/types.js';
import { runUntilIdle } from '../../src/testing/index.js';
import { defineJob } from '../../src/worker/index.js';
import { z } from 'zod';
import { isTransactionClient } from '../../src/client/types.js';
import { withTransaction } from '../../src/client/transaction.js';
import { errorOf } from '../harness/errors.js';

const ID = '0190a3e0-0000-7000-8000-0000000000aa';
const lease = { jobId: ID, runNumber: 1, attempt: 1, workerId: 'w' };
const run = workflow('client.check').external('e').build();
const handler = defineJob('client.check', z.object({}), async () => null);

const operations: [string, (db: Db) => unknown][] = [
  ['enqueueJob', (db) => enqueueJob(db, { jobType: 'x', payload: {} })],
  ['enqueueJobs', (db) => enqueueJobs(db, [{ jobType: 'x', payload: {} }])],
  ['claimJobs', (db) => claimJobs(db, { workerId: 'w', limit: 1, leaseSeconds: 30 })],
  ['markJobRunning', (db) => markJobRunning(db, lease)],
  ['heartbeatJob', (db) => heartbeatJob(db, lease)],
  ['completeJob', (db) => completeJob(db, lease)],
  ['completeJobs', (db) => completeJobs(db, [lease])],
  ['failJob', (db) => failJob(db, { ...lease, error: { code: 'c', message: 'm' }, retryable: true })],
  ['releaseJob', (db) => releaseJob(db, lease)],
  ['cancelJob', (db) => cancelJob(db, { jobId: ID, scope: noOrganizationScope() })],
  ['reapExpiredLeases', (db) => reapExpiredLeases(db, { limit: 1 })],
  ['getJob', (db) => getJob(db, { scope: noOrganizationScope(), jobId: ID })],
  ['findJob', (db) => findJob(db, { scope: noOrganizationScope(), jobId: ID })],
  ['listJobs', (db) => listJobs(db, { scope: adminScope() })],
  ['listJobEvents', (db) => listJobEvents(db, { scope: noOrganizationScope(), jobId: ID })],
  ['enqueueWorkflowRun', (db) => enqueueWorkflowRun(db, run)],
  ['enqueueWorkflowRunHandle', (db) => enqueueWorkflowRunHandle(db as PrismaClientLike, run)],
  ['workflowRunHandle', (db) => workflowRunHandle(db as PrismaClientLike, noOrganizationScope(), ID)],
  [
    'completeExternalWorkflowStep',
    (db) => completeExternalWorkflowStep(db, { workflowRunId: ID, stepKey: 'e', scope: noOrganizationScope(), outcome: { status: 'failed' } }),
  ],
  ['cancelWorkflowRun', (db) => cancelWorkflowRun(db, { workflowRunId: ID, scope: noOrganizationScope() })],
  ['getWorkflowRun', (db) => getWorkflowRun(db, { scope: noOrganizationScope(), workflowRunId: ID })],
  ['findWorkflowRun', (db) => findWorkflowRun(db, { scope: noOrganizationScope(), workflowRunId: ID })],
  ['listWorkflowRuns', (db) => listWorkflowRuns(db, { scope: adminScope() })],
  ['countWorkflowRuns', (db) => countWorkflowRuns(db, { scope: adminScope() })],
  ['listWorkflowSteps', (db) => listWorkflowSteps(db, { scope: noOrganizationScope(), workflowRunId: ID })],
  ['listWorkflowStepDependencies', (db) => listWorkflowStepDependencies(db, { scope: noOrganizationScope(), workflowRunId: ID })],
  [
    'compareAndReplaySucceededJob',
    (db) => compareAndReplaySucceededJob(db, { scope: adminScope(), sourceJobId: ID, expectedRunNumber: 1, replayRequestKey: 'k', reason: 'r' }),
  ],
  [
    'compareAndRequeueJob',
    (db) =>
      compareAndRequeueJob(db, {
        scope: adminScope(),
        jobId: ID,
        expectedStatus: 'DEAD_LETTERED',
        expectedRunNumber: 1,
        statePolicy: 'preserve_progress_and_checkpoint',
      }),
  ],
  ['withTransaction', (db) => withTransaction(db, 'test', async () => 1)],
  ['isTransactionClient', (db) => isTransactionClient(db)],
];

const notClients: [string, unknown][] = [
  ['{}', {}],
  ['undefined', undefined],
  ['null', null],
  ['a string', 'postgresql://localhost/app'],
  ['an object whose $queryRaw is not a function', { $queryRaw: 'SELECT 1', $executeRaw: 1 }],
];

describe('db that is not a Prisma client', () => {
  it.each(notClients)('%s is client.invalid from every operation', async (_name, notClient) => {
    for (const [name, operation] of operations) {
      const error = await errorOf(() => operation(notClient as Db));
      expect(error, name).toBeInstanceOf(ValidationError);
      expect({ name, code: (error as ValidationError).code, field: (error as ValidationError).field }).toEqual({ name, code: 'client.invalid', field: 'db' });
    }
  });

  it.each(notClients)('%s is a coded error from createWorker and runUntilIdle', async (_name, notClient) => {
    for (const call of [() => createWorker({ db: notClient as never, handlers: [handler] }), () => runUntilIdle(notClient as never, [handler])]) {
      const error = await errorOf(call);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: 'worker.invalid_options', field: 'db' });
    }
  });
});
