import { z } from 'zod';
import { defineJob, enqueueWorkflowRunHandle, workflow, type PrismaClientLike } from 'runledger';

// Fan-out: one step per document counts its words.
export const countWords = defineJob('docs.count_words', z.object({ text: z.string() }), ({ text }) => ({
  words: text.split(/\s+/).filter(Boolean).length,
}));

// Fan-in: the join step reads every prerequisite's output (one query for the whole batch it is claimed in).
export const sumCounts = defineJob('docs.sum_counts', z.object({}), (_payload, ctx) => {
  let total = 0;
  for (const key of ctx.prerequisites.keys()) {
    total += ctx.prerequisites.get(key, countWords)?.output?.words ?? 0; // typed by the definition
  }
  return { total, parts: ctx.prerequisites.size, run: ctx.workflowRunId };
});

export async function countAllWords(prisma: PrismaClientLike, texts: readonly string[]) {
  const run = workflow('docs.count');
  const parts = texts.map((text, index) => {
    run.job(`count-${index}`, countWords, { text });
    return `count-${index}`;
  });
  const handle = await enqueueWorkflowRunHandle(prisma, run.job('sum', sumCounts, {}).afterSuccess('sum', parts).resultStep('sum').build());
  return handle.getResult({ timeoutMs: 30_000 }); // typed: { total: number; parts: number; run: string | null }
}
