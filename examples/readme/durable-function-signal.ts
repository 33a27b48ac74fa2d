import { z } from 'zod';
import { defineFunction, organizationScope, signal } from 'runledger';
import { prisma } from './prisma-client.js';

export const approval = defineFunction('orders.approval', z.object({ orderId: z.string() }), async (input, ctx) => {
  const answer = await ctx.waitForSignal<{ approved: boolean }>('decision', { timeoutMs: 3 * 24 * 3_600_000 });
  if (answer.status === 'timed_out') return { orderId: input.orderId, approved: false, reason: 'no answer' };
  return { orderId: input.orderId, approved: answer.payload.approved };
});

/** The host's endpoint: the decision commits with the host's own write, or neither does. */
export async function decide(workflowRunId: string, orderId: string, approved: boolean, orgId: string) {
  await prisma.$transaction(async (tx) => {
    await tx.order.update({ where: { id: orderId }, data: { customer: approved ? 'approved' : 'declined' } });
    await signal(tx, workflowRunId, 'decision', { approved }, { scope: organizationScope(orgId), idempotencyKey: `decision:${orderId}` });
  });
}
