/**
 * Property: for any DAG of job steps with random edge modes and random job
 * outcomes, running it through the real queue ends every step exactly as a
 * simple model says (run if every ON_SUCCESS prerequisite succeeded, else
 * canceled as unsatisfied; ON_TERMINAL prerequisites only need to end), the
 * counters end at zero pending, and the run status follows from the steps.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { enqueueWorkflowRun, getWorkflowRun, noOrganizationScope, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

interface Dag {
  succeeds: boolean[];
  edges: { from: number; to: number; onTerminal: boolean }[];
  result: number | null;
}

const dagArbitrary: fc.Arbitrary<Dag> = fc.integer({ min: 1, max: 7 }).chain((n) =>
  fc.record({
    succeeds: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
    // Edges only from a lower to a higher index: acyclic by construction; unique pairs.
    edges: fc.uniqueArray(
      fc.record({ from: fc.integer({ min: 0, max: n - 1 }), to: fc.integer({ min: 0, max: n - 1 }), onTerminal: fc.boolean() }).filter((e) => e.from < e.to),
      { selector: (e) => `${e.from}-${e.to}`, maxLength: (n * (n - 1)) / 2 },
    ),
    result: fc.option(fc.integer({ min: 0, max: n - 1 }), { nil: null }),
  }),
);

function expectedStatuses(dag: Dag): string[] {
  const status: string[] = [];
  dag.succeeds.forEach((succeeds, i) => {
    const unsatisfied = dag.edges.some((e) => e.to === i && !e.onTerminal && status[e.from] !== 'SUCCEEDED');
    status[i] = unsatisfied ? 'CANCELED' : succeeds ? 'SUCCEEDED' : 'FAILED';
  });
  return status;
}

describe('workflow release, property-based', () => {
  it('ends every step and the run as the model predicts', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(dagArbitrary, async (dag) => {
        round += 1;
        const jobType = `prop.r${round}`;
        const builder = workflow('property');
        for (const [i, succeeds] of dag.succeeds.entries()) builder.job(`s${i}`, jobType, { i, succeeds }, { maxAttempts: 1 });
        for (const edge of dag.edges) (edge.onTerminal ? builder.afterTerminal : builder.afterSuccess).call(builder, `s${edge.to}`, [`s${edge.from}`]);
        if (dag.result !== null) builder.resultStep(`s${dag.result}`);
        const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.build());

        await runRunnableJobs(db.prisma, (job) => {
          const payload = job.payload as { i: number; succeeds: boolean };
          return payload.succeeds ? { ok: true, output: { i: payload.i } } : { ok: false, retryable: false };
        });

        const steps = await stepsByKey(db.prisma, workflowRunId);
        const expected = expectedStatuses(dag);
        expect(dag.succeeds.map((_, i) => steps[`s${i}`]!.status)).toEqual(expected);
        for (const step of Object.values(steps)) {
          expect(step.dependencyCountPending).toBe(0);
          if (step.status === 'CANCELED') expect(step.jobId).toBeNull();
        }
        const run = await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId });
        const anyError = expected.some((s) => s !== 'SUCCEEDED');
        expect(run.status).toBe(anyError ? 'COMPLETED_WITH_ERRORS' : 'SUCCEEDED');
        expect(run.result).toEqual(!anyError && dag.result !== null ? { i: dag.result } : null);
      }),
      { numRuns: 30 },
    );
  });
});
