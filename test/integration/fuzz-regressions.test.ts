/**
 * Bugs the public-API fuzzer (fuzz-public-api.test.ts) found, each pinned by
 * the smallest input that showed it: a raw TypeError instead of a coded
 * validation error, or a refusal that came after a write.
 */
import { describe, expect, it } from 'vitest';
import {
  createConsoleLogger,
  enqueueWorkflowRunHandle,
  listWorkflowRuns,
  noOrganizationScope,
  slotIdempotencyKey,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

describe('found by fuzzing', () => {
  it('the builder refuses prerequisites that are not an array with workflow.invalid_input naming the step', () => {
    const builder = workflow('fuzz.builder').job('a', 'x', {}).job('b', 'x', {});
    expect(() => builder.afterSuccess('b', 7 as never)).toThrow(expect.objectContaining({ code: 'workflow.invalid_input', field: 'steps.b.dependsOn' }));
    expect(() => builder.afterTerminal('b', null as never)).toThrow(expect.objectContaining({ code: 'workflow.invalid_input' }));
  });

  it('slotIdempotencyKey refuses a non-Date or invalid slot and a non-string key with schedule.invalid_input', () => {
    expect(() => slotIdempotencyKey('nightly', {} as Date)).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'slot' }));
    expect(() => slotIdempotencyKey('nightly', new Date(Number.NaN))).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'slot' }));
    expect(() => slotIdempotencyKey(Symbol('k') as never, new Date(0))).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'scheduleKey' }));
    expect(slotIdempotencyKey('nightly', new Date(0))).toBe('schedule:nightly:1970-01-01T00:00:00.000Z');
  });

  it('enqueueWorkflowRunHandle checks its handle options before enqueueing: a bad one writes no run', async () => {
    const run = () => workflow('fuzz.handle-options').external('e').build();
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), { pollIntervalMs: -5 })).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'pollIntervalMs' });
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), { scope: { kind: 'organization' } as never })).rejects.toMatchObject({ code: 'workflow.invalid_input' });
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), null as never)).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'options' });
    expect((await listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), workflowType: 'fuzz.handle-options' })).items).toEqual([]);
  });

  it('createConsoleLogger refuses null options or an unknown level with worker.invalid_options', () => {
    expect(() => createConsoleLogger(null as never)).toThrow(expect.objectContaining({ code: 'worker.invalid_options', field: 'level' }));
    expect(() => createConsoleLogger({ level: 'loud' as never })).toThrow(expect.objectContaining({ code: 'worker.invalid_options', field: 'level' }));
    expect(() => createConsoleLogger({ level: 'toString' as never })).toThrow(expect.objectContaining({ code: 'worker.invalid_options' }));
    expect(typeof createConsoleLogger().info).toBe('function');
  });
});
