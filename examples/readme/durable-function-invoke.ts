import { z } from 'zod';
import { defineFunction, defineJob, isRunledgerError, workflow } from 'runledger';

const resize = defineJob('images.resize', z.object({ url: z.string() }), (input) => ({ thumbnail: `${input.url}?w=200` }));
const publish = defineJob('images.publish', z.object({ url: z.string() }), (input) => ({ published: input.url }));

const moderate = defineFunction('images.moderate', z.object({ url: z.string() }), async (input, ctx) => {
  return ctx.step('score', () => ({ safe: !input.url.includes('unsafe') }));
});

export const upload = defineFunction('images.upload', z.object({ url: z.string() }), async (input, ctx) => {
  // Another durable function: its run is the child, its return value the result.
  const verdict = await ctx.invoke('moderate', moderate.run({ url: input.url }));
  if (!verdict.safe) return { rejected: true };
  // A plain job (run as a one-step workflow run): its output.
  const { thumbnail } = await ctx.invoke('resize', { job: resize, payload: { url: input.url } });
  try {
    // A DAG run: its result step's output.
    return await ctx.invoke('publish', workflow('images.publishing').job('publish', publish, { url: thumbnail }).resultStep('publish').build());
  } catch (error) {
    if (isRunledgerError(error, 'workflow.child_failed')) return { rejected: false, published: false };
    throw error;
  }
});
