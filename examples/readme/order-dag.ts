import { z } from 'zod';
import { completeExternalWorkflowStep, defineJob, enqueueWorkflowRunHandle, noOrganizationScope, workflow } from 'runledger';
import { prisma } from './prisma-client.js';

/** The host's payment provider and carrier: both deduplicate by the key they are given. */
export interface OrderApis {
  charge(orderId: string, total: number, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ chargeId: string }>;
  ship(orderId: string, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ trackingId: string }>;
}

const order = z.object({ orderId: z.string() });

// The flow as a DAG: one job per step, the approval an external step, the edges declared up front.
export function orderDag(apis: OrderApis) {
  const charge = defineJob(
    'orders.charge',
    order,
    async ({ orderId }, ctx) => {
      const { total } = await prisma.order.findUniqueOrThrow({ where: { id: orderId } });
      return apis.charge(orderId, total, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal });
    },
    { retry: { maxAttempts: 3 } },
  );
  // A transactional handler: the reservation commits with the job's success, exactly once.
  const reserve = defineJob(
    'orders.reserve',
    order,
    async ({ orderId }, ctx) => {
      await ctx.tx.$executeRaw`INSERT INTO stock_reservations (order_id) VALUES (${orderId}::uuid)`;
    },
    { transaction: prisma },
  );
  const ship = defineJob('orders.ship', order, ({ orderId }, ctx) => apis.ship(orderId, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));

  const start = (orderId: string) =>
    enqueueWorkflowRunHandle(
      prisma,
      workflow('orders.fulfil', { orderId })
        .job('charge', charge, { orderId })
        .job('reserve', reserve, { orderId })
        .afterSuccess('reserve', ['charge'])
        .external('approval') // waits, holding no worker slot, until the host completes it
        .afterSuccess('approval', ['reserve'])
        .job('ship', ship, { orderId })
        .afterSuccess('ship', ['approval'])
        .resultStep('ship')
        .build(),
    );
  // Called by the host when a person approves (inside its own transaction too).
  const approve = (workflowRunId: string, by: string) =>
    completeExternalWorkflowStep(prisma, {
      workflowRunId,
      stepKey: 'approval',
      scope: noOrganizationScope(),
      outcome: { status: 'succeeded', output: { by } },
    });
  return { handlers: [charge, reserve, ship], start, approve };
}
