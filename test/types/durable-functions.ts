/**
 * Type tests of durable functions (checked by `npm run typecheck`; nothing here runs): a step's result is its
 * value as JSON, a run's result is the body's, the input is the schema's, and a transactional step exists only
 * on a function given a transaction client, whose `tx` is that client's.
 */
import { expectTypeOf } from 'vitest';
import { z } from 'zod';
import { defineFunction, enqueueWorkflowRunHandle, type PrismaClientLike } from 'runledger';
import type { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';

declare const prisma: PrismaClientLike;
declare const host: HostPrismaClient;

export const checkout = defineFunction('types.checkout', z.object({ orderId: z.string() }), async (input, ctx) => {
  const reserved = await ctx.step('reserve', () => ({ orderId: input.orderId, at: new Date() }));
  expectTypeOf(reserved).toEqualTypeOf<{ orderId: string; at: string }>();
  const nothing = await ctx.step('log', () => undefined);
  expectTypeOf(nothing).toEqualTypeOf<null>();
  await ctx.sleep(1_000);
  // @ts-expect-error no transaction client given: no transactional step
  await ctx.transactionalStep('write', () => 1);
  return { reserved: reserved.orderId };
});

export async function start(): Promise<void> {
  const handle = await enqueueWorkflowRunHandle(prisma, checkout.run({ orderId: 'o1' }, { organizationId: 'org' }));
  expectTypeOf(await handle.getResult()).toEqualTypeOf<{ reserved: string }>();
  // @ts-expect-error the input is the schema's
  checkout.run({ orderId: 1 });
}

export const paid = defineFunction(
  'types.paid',
  z.object({ orderId: z.string() }),
  async (input, ctx) => {
    const count = await ctx.transactionalStep('count', (tx) => tx.order.count({ where: { id: input.orderId } }));
    expectTypeOf(count).toEqualTypeOf<number>();
    const none = await ctx.transactionalStep('touch', async (tx) => {
      await tx.order.deleteMany({ where: { id: input.orderId } });
    });
    expectTypeOf(none).toEqualTypeOf<null>();
    return count;
  },
  { transaction: host },
);
