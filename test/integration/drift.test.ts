/**
 * The drift guard: schema.prisma and the hand-written migrations must describe
 * the same database, and every model must round-trip through the generated
 * client. The guard is shown able to fail on a deliberately divergent schema.
 */
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';
import { schemaDrift } from '../harness/drift.js';

const db = useTestDatabase();
let schemaText: string;
let client: pg.Client;

beforeAll(async () => {
  schemaText = await readFile(new URL('../../prisma/schema.prisma', import.meta.url), 'utf8');
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
});

describe('schema drift guard', () => {
  it('finds no difference between schema.prisma and the migrated database', async () => {
    expect(await schemaDrift(schemaText, client, 'runledger')).toEqual([]);
  });

  it('names a column whose nullability differs', async () => {
    const divergent = schemaText.replace('jobType          String    @map("job_type")', 'jobType          String?   @map("job_type")');
    expect(divergent).not.toBe(schemaText);
    expect(await schemaDrift(divergent, client, 'runledger')).toEqual([
      'column job_queue.job_type (JobQueue.jobType): database NOT NULL, schema.prisma optional',
    ]);
  });

  it('names a column whose type differs, a missing column, and an enum value missing from the database', async () => {
    const divergent = schemaText
      .replace('priority         Int       @default(0)', 'priority         String    @default("0")')
      .replace(
        'finishedAt       DateTime? @map("finished_at") @db.Timestamptz(6)\n',
        'finishedAt       DateTime? @map("finished_at") @db.Timestamptz(6)\n  archivedAt       DateTime? @map("archived_at") @db.Timestamptz(6)\n',
      )
      .replace('  REQUEUED\n', '  REQUEUED\n  ARCHIVED\n');
    const report = await schemaDrift(divergent, client, 'runledger');
    expect(report).toContain('column job_queue.priority (JobQueue.priority): database type integer, schema.prisma type text');
    expect(report).toContain('column job_queue.archived_at (JobQueue.archivedAt): missing in database');
    expect(report.some((line) => line.startsWith('enum job_event_type: database has') && line.includes('ARCHIVED'))).toBe(true);
    expect(report).toHaveLength(3);
  });

  it('names a table and a column the schema does not know', async () => {
    await client.query('BEGIN');
    try {
      await client.query('ALTER TABLE runledger.job_events ADD COLUMN stray int');
      await client.query('CREATE TABLE runledger.stray_table (id int PRIMARY KEY)');
      const report = await schemaDrift(schemaText, client, 'runledger');
      expect(report).toEqual(['column job_events.stray: in database but not in model JobEvent', 'table stray_table: in database but not in schema.prisma']);
    } finally {
      await client.query('ROLLBACK');
    }
  });

  it('names a unique constraint that exists on one side only', async () => {
    const divergent = schemaText.replace('@@unique([workflowRunId, stepKey], map: "workflow_steps_run_key_key")', '');
    expect(await schemaDrift(divergent, client, 'runledger')).toEqual([
      'table workflow_steps: unique (workflow_run_id,step_key) in database, missing in schema.prisma',
    ]);
  });
});

describe('every model through the generated client', () => {
  it('round-trips a schedule row', async () => {
    const nextRunAt = new Date('2030-01-01T03:00:00Z');
    const created = await db.prisma.jobSchedule.create({
      data: {
        id: newId(),
        scheduleKey: 'drift.schedule',
        cron: '0 3 * * *',
        jobType: 'x.y',
        organizationId: 'org_cuid1',
        payload: { a: [1] },
        nextRunAt,
        resourceKey: 'r',
      },
    });
    expect(await db.prisma.jobSchedule.findUniqueOrThrow({ where: { scheduleKey: 'drift.schedule' } })).toEqual(created);
    expect(created).toMatchObject({ timezone: 'UTC', enabled: true, catchUpMaxSlots: 1, priority: 0, maxAttempts: 5, timeoutSeconds: 300, lastSlotAt: null });
  });

  it('round-trips job, event, run, step, dependency and replay rows', async () => {
    const prisma = db.prisma;
    const org = newId();
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const source = await prisma.jobQueue.create({
      data: {
        id: newId(),
        jobType: 'billing.capture',
        organizationId: org,
        payload: { amount: 10, tags: ['a'] },
        status: 'SUCCEEDED',
        output: { charged: true },
        finishedAt: now,
        idempotencyKey: 'k-1',
        enqueueRequest: { jobType: 'billing.capture' },
        progress: { pct: 100 },
        checkpoint: { cursor: 3 },
      },
    });
    const replay = await prisma.jobQueue.create({ data: { id: newId(), jobType: 'billing.capture', payload: { amount: 10, tags: ['a'] } } });
    const stepJobId = newId();
    const jobStepId = newId();
    const event = await prisma.jobEvent.create({
      data: { id: newId(), jobId: source.id, eventType: 'SUCCEEDED', runNumber: 1, attempt: 1, payload: { by: 'w1' } },
    });
    const run = await prisma.workflowRun.create({
      data: { id: newId(), workflowType: 'onboarding', organizationId: org, metadata: { user: 'u1' }, resultStepKey: 'b' },
    });
    // The job <-> step link is checked at commit: both rows in one transaction.
    const [stepJob, jobStep] = await prisma.$transaction([
      prisma.jobQueue.create({ data: { id: stepJobId, jobType: 'x.a', payload: {}, workflowStepId: jobStepId } }),
      prisma.workflowStep.create({
        data: {
          id: jobStepId,
          workflowRunId: run.id,
          stepKey: 'a',
          executionKind: 'JOB',
          jobType: 'x.a',
          payload: {},
          status: 'ENQUEUED',
          jobId: stepJobId,
          priority: 2,
          maxAttempts: 3,
          timeoutSeconds: 30,
        },
      }),
    ]);
    const externalStep = await prisma.workflowStep.create({
      data: { id: newId(), workflowRunId: run.id, stepKey: 'b', executionKind: 'EXTERNAL', dependencyCountTotal: 1, dependencyCountPending: 1 },
    });
    const edge = await prisma.workflowStepDependency.create({
      data: { prerequisiteStepId: jobStep.id, dependentStepId: externalStep.id, workflowRunId: run.id, releaseMode: 'ON_TERMINAL' },
    });
    const lineage = await prisma.jobReplay.create({
      data: { sourceJobId: source.id, sourceRunNumber: 1, replayRequestKey: 'r-1', replayJobId: replay.id, reason: 'customer asked' },
    });

    const readJob = await prisma.jobQueue.findUniqueOrThrow({ where: { id: source.id }, include: { replaysOf: true } });
    expect(readJob).toMatchObject({ ...source, replaysOf: [lineage] });
    expect(await prisma.jobEvent.findMany({ where: { jobId: source.id } })).toEqual([event]);
    expect(readJob.maxAttempts).toBe(5);
    expect(readJob.runNumber).toBe(1);
    const readRun = await prisma.workflowRun.findUniqueOrThrow({
      where: { id: run.id },
      include: { steps: { orderBy: { stepKey: 'asc' } }, dependencies: true },
    });
    expect(readRun).toMatchObject({ ...run, steps: [jobStep, externalStep], dependencies: [edge] });
    expect(readRun.status).toBe('RUNNING');
    expect(readRun.metadata).toEqual({ user: 'u1' });
    const readStep = await prisma.workflowStep.findUniqueOrThrow({ where: { jobId: stepJob.id }, include: { job: true, jobOfStep: true } });
    expect(readStep.job).toEqual(stepJob);
    expect(readStep.jobOfStep).toEqual(stepJob);
    const readReplay = await prisma.jobQueue.findUniqueOrThrow({ where: { id: replay.id }, include: { replayedAs: true } });
    expect(readReplay.replayedAs).toEqual(lineage);
  });
});
