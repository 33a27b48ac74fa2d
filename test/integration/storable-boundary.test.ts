/**
 * Every public write refuses what PostgreSQL cannot store with a coded
 * ValidationError naming the field, before any SQL: inside the host's own
 * transaction the error leaves that transaction usable, and the host's other
 * writes commit.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminScope,
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  compareAndReplaySucceededJob,
  completeExternalWorkflowStep,
  completeJob,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  failJob,
  getJob,
  noOrganizationScope,
  heartbeatJob,
  listJobs,
  listWorkflowRuns,
  releaseJob,
  ValidationError,
  workflow,
  type Db,
} from '../../src/index.js';
import { stepsByKey } from '../harness/workflow-helpers.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const NUL = 'a\u0000b';
const LONE = 'a\uD800b';

beforeAll(async () => {
  await db.prisma.$executeRaw`CREATE TABLE public.host_orders (id text PRIMARY KEY)`;
});

async function refusal(promise: Promise<unknown>): Promise<ValidationError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

async function hostOrders(): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id FROM public.host_orders ORDER BY id`;
  return rows.map((row) => row.id);
}

async function insertOrder(tx: Db, id: string): Promise<void> {
  await tx.$executeRaw`INSERT INTO public.host_orders (id) VALUES (${id})`;
}

describe('inside the host transaction', () => {
  it('enqueueJob refuses a NUL payload before any SQL; the host catches it, enqueues again and commits', async () => {
    const jobId = await db.prisma.$transaction(async (tx) => {
      await insertOrder(tx, 'job-1');
      const error = await refusal(enqueueJob(tx, { jobType: 'host.job', payload: { note: NUL } }));
      expect(error).toMatchObject({ code: 'job.invalid_input', field: 'payload.note' });
      await insertOrder(tx, 'job-2');
      return (await enqueueJob(tx, { jobType: 'host.job', payload: { note: 'ab' } })).jobId;
    });
    expect(await hostOrders()).toEqual(expect.arrayContaining(['job-1', 'job-2']));
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ payload: { note: 'ab' } });
  });

  it('enqueueWorkflowRun refuses a lone surrogate in a step key before any SQL; the host commits its own write', async () => {
    const workflowRunId = await db.prisma.$transaction(async (tx) => {
      await insertOrder(tx, 'run-1');
      const bad = workflow('host.run').job(LONE, 'host.step', {}).build();
      const error = await refusal(enqueueWorkflowRun(tx, bad));
      expect(error).toMatchObject({ code: 'workflow.invalid_input', field: 'steps.0.key' });
      return (await enqueueWorkflowRun(tx, workflow('host.run').job('a', 'host.step', {}).build())).workflowRunId;
    });
    expect(await hostOrders()).toContain('run-1');
    expect(Object.keys(await stepsByKey(db.prisma, workflowRunId))).toEqual(['a']);
  });

  it('completeExternalWorkflowStep refuses NUL in the output before any SQL; the host completes it properly and commits', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('host.approval').external('approve').build());
    await db.prisma.$transaction(async (tx) => {
      await insertOrder(tx, 'approval-1');
      const error = await refusal(
        completeExternalWorkflowStep(tx, {
          workflowRunId,
          stepKey: 'approve',
          scope: noOrganizationScope(),
          outcome: { status: 'succeeded', output: { by: NUL } },
        }),
      );
      expect(error).toMatchObject({ code: 'workflow.invalid_input', field: 'outcome.output.by' });
      await completeExternalWorkflowStep(tx, {
        workflowRunId,
        stepKey: 'approve',
        scope: noOrganizationScope(),
        outcome: { status: 'succeeded', output: { by: 'ana' } },
      });
    });
    expect(await hostOrders()).toContain('approval-1');
    expect((await stepsByKey(db.prisma, workflowRunId)).approve).toMatchObject({ status: 'SUCCEEDED', output: { by: 'ana' } });
  });
});

describe('every stored field', () => {
  it('is checked by every public operation, naming the field, with the host transaction still usable', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'boundary.job', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['boundary.job'], limit: 1, leaseSeconds: 60 });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('boundary.run').external('e').build());
    const ext = { workflowRunId, stepKey: 'e', scope: noOrganizationScope(), outcome: { status: 'failed' as const } };
    const deep = (() => {
      let value: unknown = 1;
      for (let i = 0; i < 5_000; i += 1) value = [value];
      return value as never;
    })();

    const cases: [string, (tx: Db) => Promise<unknown>, string, string][] = [
      ['enqueueJob jobType', (tx) => enqueueJob(tx, { jobType: NUL, payload: {} }), 'job.invalid_input', 'jobType'],
      ['enqueueJob key', (tx) => enqueueJob(tx, { jobType: 'x', payload: {}, idempotencyKey: LONE }), 'job.invalid_input', 'idempotencyKey'],
      ['enqueueJob payload key', (tx) => enqueueJob(tx, { jobType: 'x', payload: { [NUL]: 1 } }), 'job.invalid_input', 'payload.a\uFFFDb'],
      ['enqueueJob deep payload', (tx) => enqueueJob(tx, { jobType: 'x', payload: deep }), 'job.invalid_input', `payload${'.0'.repeat(256)}`],
      [
        'enqueueJobs',
        (tx) =>
          enqueueJobs(tx, [
            { jobType: 'x', payload: {} },
            { jobType: 'x', payload: [LONE] },
          ]),
        'job.invalid_input',
        '1.payload.0',
      ],
      ['claimJobs jobTypes', (tx) => claimJobs(tx, { workerId: 'w', jobTypes: [NUL], limit: 1, leaseSeconds: 60 }), 'job.invalid_input', 'jobTypes.0'],
      ['claimJobs workerId', (tx) => claimJobs(tx, { workerId: LONE, limit: 1, leaseSeconds: 60 }), 'job.invalid_input', 'workerId'],
      ['heartbeat progress', (tx) => heartbeatJob(tx, { ...lease!, save: { progress: { p: NUL } } }), 'job.invalid_input', 'save.progress.p'],
      ['heartbeat checkpoint', (tx) => heartbeatJob(tx, { ...lease!, save: { checkpoint: [LONE] } }), 'job.invalid_input', 'save.checkpoint.0'],
      ['completeJob output', (tx) => completeJob(tx, { ...lease!, output: { o: NUL } }), 'job.invalid_input', 'output.o'],
      ['completeJobs output', (tx) => completeJobs(tx, [{ ...lease!, output: { o: LONE } }]), 'job.invalid_input', '0.output.o'],
      ['failJob message', (tx) => failJob(tx, { ...lease!, error: { code: 'c', message: NUL }, retryable: true }), 'job.invalid_input', 'error.message'],
      ['failJob code', (tx) => failJob(tx, { ...lease!, error: { code: LONE, message: 'm' }, retryable: true }), 'job.invalid_input', 'error.code'],
      ['releaseJob reason', (tx) => releaseJob(tx, { ...lease!, reason: NUL }), 'job.invalid_input', 'reason'],
      ['cancelJob reason', (tx) => cancelJob(tx, { jobId, scope: noOrganizationScope(), reason: NUL }), 'job.invalid_input', 'reason'],
      ['listJobs jobType', (tx) => listJobs(tx, { scope: adminScope(), jobType: NUL }), 'job.invalid_input', 'jobType'],
      [
        'replay key',
        (tx) => compareAndReplaySucceededJob(tx, { scope: adminScope(), sourceJobId: jobId, expectedRunNumber: 1, replayRequestKey: NUL, reason: 'r' }),
        'job.invalid_input',
        'replayRequestKey',
      ],
      [
        'replay reason',
        (tx) => compareAndReplaySucceededJob(tx, { scope: adminScope(), sourceJobId: jobId, expectedRunNumber: 1, replayRequestKey: 'k', reason: LONE }),
        'job.invalid_input',
        'reason',
      ],
      ['workflow type', (tx) => enqueueWorkflowRun(tx, workflow(NUL).external('e').build()), 'workflow.invalid_input', 'workflowType'],
      ['workflow key', (tx) => enqueueWorkflowRun(tx, workflow('w').idempotencyKey(NUL).external('e').build()), 'workflow.invalid_input', 'idempotencyKey'],
      ['workflow metadata', (tx) => enqueueWorkflowRun(tx, workflow('w', { m: LONE }).external('e').build()), 'workflow.invalid_input', 'metadata.m'],
      ['step payload', (tx) => enqueueWorkflowRun(tx, workflow('w').job('a', 't', { p: NUL }).build()), 'workflow.invalid_input', 'steps.0.payload.p'],
      ['step job type', (tx) => enqueueWorkflowRun(tx, workflow('w').job('a', LONE, {}).build()), 'workflow.invalid_input', 'steps.0.jobType'],
      [
        'dependency step',
        (tx) => enqueueWorkflowRun(tx, { workflowType: 'w', steps: [{ key: 'a', kind: 'external', dependsOn: [{ step: NUL }] }] }),
        'workflow.invalid_input',
        'steps.0.dependsOn.0.step',
      ],
      ['external errorMessage', (tx) => completeExternalWorkflowStep(tx, { ...ext, errorMessage: NUL }), 'workflow.invalid_input', 'errorMessage'],
      ['external errorCode', (tx) => completeExternalWorkflowStep(tx, { ...ext, errorCode: LONE }), 'workflow.invalid_input', 'errorCode'],
      ['external statusReason', (tx) => completeExternalWorkflowStep(tx, { ...ext, statusReason: NUL }), 'workflow.invalid_input', 'statusReason'],
      ['external step key', (tx) => completeExternalWorkflowStep(tx, { ...ext, stepKey: NUL }), 'workflow.invalid_input', 'stepKey'],
      ['cancel run reason', (tx) => cancelWorkflowRun(tx, { workflowRunId, scope: noOrganizationScope(), reason: NUL }), 'workflow.invalid_input', 'reason'],
      ['list runs type', (tx) => listWorkflowRuns(tx, { scope: adminScope(), workflowType: LONE }), 'workflow.invalid_input', 'workflowType'],
    ];

    await db.prisma.$transaction(async (tx) => {
      for (const [name, call, code, field] of cases) {
        const error = await refusal(call(tx));
        expect({ name, code: error.code, field: error.field }).toEqual({ name, code, field });
      }
      // Had any of them reached PostgreSQL, this would fail with 25P02.
      await insertOrder(tx, 'after-every-refusal');
    });
    expect(await hostOrders()).toContain('after-every-refusal');
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'LEASED', progress: null, checkpoint: null });
  });
});
