/**
 * Workflow idempotency compares a canonical snapshot of the request: steps and
 * each step's dependency list are sets (keyed by step key), objects compare
 * without regard to key order, and JSON-equal numbers are equal. Snapshots
 * stored before steps were sorted (topological order of the original input)
 * keep matching the same request.
 */
import { describe, expect, it } from 'vitest';
import { enqueueWorkflowRun, isRunledgerError, type WorkflowRunInput } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

/** a, b -> c (c depends on a on success and on b on any outcome) -> d; keyed by `key`. */
function diamond(type: string, key: string, order: 'as-written' | 'shuffled', payload: unknown = { n: 1, tags: ['x', 'y'] }): WorkflowRunInput {
  const steps: WorkflowRunInput['steps'] = [
    { key: 'a', kind: 'job', jobType: `${type}.a`, payload: payload as never },
    { key: 'b', kind: 'external' },
    { key: 'c', kind: 'job', jobType: `${type}.c`, payload: { z: 1, a: 2 }, dependsOn: [{ step: 'a' }, { step: 'b', mode: 'on_terminal' }] },
    { key: 'd', kind: 'job', jobType: `${type}.d`, payload: {}, dependsOn: [{ step: 'c' }], result: true },
  ];
  if (order === 'shuffled') {
    const [a, b, c, d] = steps;
    const cShuffled = { ...c!, payload: { a: 2, z: 1 }, dependsOn: [{ step: 'b', mode: 'on_terminal' as const }, { step: 'a' }] };
    return { workflowType: type, idempotencyKey: key, metadata: { y: 1, x: [1, 2] }, steps: [d!, cShuffled, b!, a!] };
  }
  return { workflowType: type, idempotencyKey: key, metadata: { x: [1, 2], y: 1 }, steps };
}

async function runCount(type: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE workflow_type = ${type}`;
  return row!.n;
}

describe('workflow idempotency snapshot', () => {
  it('treats the same DAG with its steps and dependency lists in another order as the same request', async () => {
    const first = await enqueueWorkflowRun(db.prisma, diamond('idem.order', 'k', 'as-written'));
    const again = await enqueueWorkflowRun(db.prisma, diamond('idem.order', 'k', 'shuffled'));
    expect(again).toEqual({ workflowRunId: first.workflowRunId, status: first.status, disposition: 'existing' });
    expect(await runCount('idem.order')).toBe(1);
  });

  it('still refuses a different DAG under the key: another dependency mode, another edge, another payload', async () => {
    await enqueueWorkflowRun(db.prisma, diamond('idem.diff', 'k', 'as-written'));
    const variants: WorkflowRunInput[] = [];
    const mode = diamond('idem.diff', 'k', 'shuffled');
    mode.steps[1] = { ...mode.steps[1]!, dependsOn: [{ step: 'b' }, { step: 'a' }] } as never;
    variants.push(mode);
    const edge = diamond('idem.diff', 'k', 'as-written');
    edge.steps[3] = { ...edge.steps[3]!, dependsOn: [{ step: 'c' }, { step: 'a' }] } as never;
    variants.push(edge);
    variants.push(diamond('idem.diff', 'k', 'shuffled', { n: 2, tags: ['x', 'y'] }));
    variants.push(diamond('idem.diff', 'k', 'shuffled', { n: 1, tags: ['y', 'x'] })); // payload arrays keep their order
    for (const variant of variants) {
      const error = await enqueueWorkflowRun(db.prisma, variant).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.idempotency_conflict')).toBe(true);
    }
    expect(await runCount('idem.diff')).toBe(1);
  });

  it('compares JSON-equal numbers as equal (1, 1.0 and 1e0 in a stored snapshot)', async () => {
    const first = await enqueueWorkflowRun(db.prisma, diamond('idem.num', 'k', 'as-written', { n: 1, big: 1e21, tags: ['x', 'y'] }));
    for (const spelling of ['1.0', '1e0', '1.000']) {
      // As another writer (or version) might have stored it: same JSON numbers, other spellings.
      await db.prisma.$executeRaw`
        UPDATE runledger.workflow_runs
           SET enqueue_request = jsonb_set(enqueue_request, '{steps}', (
                 SELECT jsonb_agg(CASE WHEN s->>'key' = 'a'
                                       THEN jsonb_set(jsonb_set(s, '{payload,n}', ${spelling}::jsonb), '{payload,big}', '1000000000000000000000.0'::jsonb)
                                       ELSE s END ORDER BY ord)
                   FROM jsonb_array_elements(enqueue_request->'steps') WITH ORDINALITY AS e(s, ord)))
         WHERE id = ${first.workflowRunId}::uuid`;
      const again = await enqueueWorkflowRun(db.prisma, diamond('idem.num', 'k', 'shuffled', { tags: ['x', 'y'], big: 1e21, n: 1.0 }));
      expect(again).toMatchObject({ workflowRunId: first.workflowRunId, disposition: 'existing' });
    }
  });

  it('keeps matching a snapshot stored before steps were sorted (topological input order, dependencies as written)', async () => {
    const first = await enqueueWorkflowRun(db.prisma, diamond('idem.legacy', 'k', 'as-written'));
    // The earlier format: steps in the topological order of the input (here b, a, c, d from an input written b-first)
    // and each dependency list as written.
    const legacySteps = [
      { key: 'b', kind: 'external', dependsOn: [] },
      { key: 'a', kind: 'job', jobType: 'idem.legacy.a', payload: { n: 1, tags: ['x', 'y'] }, priority: 0, maxAttempts: 5, timeoutSeconds: 300, dependsOn: [] },
      {
        key: 'c',
        kind: 'job',
        jobType: 'idem.legacy.c',
        payload: { z: 1, a: 2 },
        priority: 0,
        maxAttempts: 5,
        timeoutSeconds: 300,
        dependsOn: [
          { step: 'b', mode: 'ON_TERMINAL' },
          { step: 'a', mode: 'ON_SUCCESS' },
        ],
      },
      {
        key: 'd',
        kind: 'job',
        jobType: 'idem.legacy.d',
        payload: {},
        priority: 0,
        maxAttempts: 5,
        timeoutSeconds: 300,
        dependsOn: [{ step: 'c', mode: 'ON_SUCCESS' }],
      },
    ];
    const legacy = { workflowType: 'idem.legacy', organizationId: null, metadata: { x: [1, 2], y: 1 }, resultStepKey: 'd', steps: legacySteps };
    await db.prisma.$executeRaw`
      UPDATE runledger.workflow_runs SET enqueue_request = ${JSON.stringify(legacy)}::jsonb WHERE id = ${first.workflowRunId}::uuid`;
    for (const order of ['as-written', 'shuffled'] as const) {
      expect(await enqueueWorkflowRun(db.prisma, diamond('idem.legacy', 'k', order))).toMatchObject({
        workflowRunId: first.workflowRunId,
        disposition: 'existing',
      });
    }
    const error = await enqueueWorkflowRun(db.prisma, diamond('idem.legacy', 'k', 'as-written', { n: 2 })).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'workflow.idempotency_conflict')).toBe(true);
  });
});
