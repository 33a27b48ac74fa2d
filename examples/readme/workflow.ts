import { z } from 'zod';
import { completeExternalWorkflowStep, defineJob, enqueueWorkflowRunHandle, organizationScope, workflow, type PrismaClientLike } from 'runledger';

export const crawl = defineJob('profiles.crawl', z.object({ url: z.string() }), async ({ url }) => ({ pages: [url] }));

export async function refreshProfiles(prisma: PrismaClientLike, orgId: string, userId: string, url: string) {
  const run = await enqueueWorkflowRunHandle(
    prisma,
    workflow('profiles.refresh', { requestedBy: userId })
      .organization(orgId)
      .job('crawl', crawl, { url }) // a definition: payload checked, output typed
      .job('score', 'profiles.score', {}) // or a job type by name (payload unknown to the compiler)
      .afterSuccess('score', ['crawl']) // runs only if crawl succeeded, else canceled
      .external('approval') // completed from outside
      .afterTerminal('approval', ['score']) // released whatever score's outcome
      .job('persist', 'profiles.persist', {})
      .afterSuccess('persist', ['approval'])
      .resultStep('persist')
      .build(),
  );

  await completeExternalWorkflowStep(prisma, {
    workflowRunId: run.workflowRunId,
    stepKey: 'approval',
    scope: organizationScope(orgId),
    outcome: { status: 'succeeded', output: { by: 'ana' } },
  });
  return run.getResult({ timeoutMs: 60_000 }); // persist's output (workflow.result_missing if it returned nothing)
  // typed when the result step was given by definition: getResult<{ wrong: 1 }>() does not compile
}
