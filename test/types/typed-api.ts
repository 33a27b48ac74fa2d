/**
 * Type tests of the typed API, checked by `npm run typecheck` (tsc over
 * test/): every `@ts-expect-error` line must fail to compile (tsc reports an
 * unused directive otherwise) and every other line must compile. Nothing
 * here runs; the functions are never called.
 *
 * The wrong calls are the ones issue 11 found compiling and dead-lettering at
 * run time: a wrong payload shape for a defined job, a wrong step payload, a
 * result type that does not match the result step's handler.
 */
import { expectTypeOf } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod3';
import * as v from 'valibot';
import {
  defineJob,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRunHandle,
  workflow,
  workflowRunHandle,
  organizationScope,
  recordJobEnqueueIntent,
  syncJobDefinitions,
  type JobOutput,
  type JobPayload,
  type Jsonified,
  type JsonValue,
  type PrismaClientLike,
} from 'runledger';
import type { countAllWords } from '../../examples/readme/fan-in.js';
import type { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';

declare const prisma: PrismaClientLike;

const capture = defineJob('billing.capture', z.object({ invoiceId: z.string() }), async (payload) => {
  expectTypeOf(payload).toEqualTypeOf<{ invoiceId: string }>();
  return `receipt:${payload.invoiceId}`;
});

interface Invoice {
  invoiceId: string;
}

export async function definedJobs(invoice: Invoice) {
  await enqueueJob(prisma, capture, { invoiceId: 'inv_1' });
  await enqueueJob(prisma, capture, { invoiceId: 'inv_1' }, { idempotencyKey: 'k', maxAttempts: 3, notify: false });
  // A payload typed as an interface is accepted (JsonValue's index signature refused it).
  await enqueueJob(prisma, capture, invoice);
  // @ts-expect-error a number where the schema says string
  await enqueueJob(prisma, capture, { invoiceId: 42 });
  // @ts-expect-error a misspelled field
  await enqueueJob(prisma, capture, { invoiceID: 'inv_1' });
  // @ts-expect-error a missing payload
  await enqueueJob(prisma, capture);
  // @ts-expect-error an unknown setting
  await enqueueJob(prisma, capture, { invoiceId: 'inv_1' }, { retries: 3 });

  await enqueueJobs(prisma, capture, [{ payload: { invoiceId: 'a' } }, { payload: invoice, idempotencyKey: 'b' }]);
  // @ts-expect-error one bad payload in a batch
  await enqueueJobs(prisma, capture, [{ payload: { invoiceId: 'a' } }, { payload: { invoiceId: 1 } }]);

  // The string form stays for hosts that enqueue without importing handlers: the payload is unknown.
  await enqueueJob(prisma, { jobType: 'billing.capture', payload: invoice });
  await enqueueJobs(prisma, [{ jobType: 'billing.capture', payload: { invoiceId: 'a' } }]);
}

export function payloadAndOutputTypes() {
  // The enqueue gives the schema's input, the handler receives its output.
  const parsed = defineJob('t.coerce', z.object({ n: z.coerce.number(), tag: z.string().default('x') }), (p) => {
    expectTypeOf(p).toEqualTypeOf<{ n: number; tag: string }>();
    return { at: new Date(), n: p.n, note: undefined as string | undefined, skip: () => 1 };
  });
  expectTypeOf<JobPayload<typeof parsed>>().toEqualTypeOf<{ n: unknown; tag?: string | undefined }>();
  // The stored output is what JSON.stringify writes: the Date becomes a string, functions and undefined go.
  expectTypeOf<JobOutput<typeof parsed>>().toEqualTypeOf<{ at: string; n: number; note?: string }>();
  expectTypeOf<JobOutput<typeof capture>>().toEqualTypeOf<string>();
  // A field of a handler's output reads without a null check (it did not compile while JobOutput added `| null`).
  const stored = { at: '', n: 1 } as JobOutput<typeof parsed>;
  expectTypeOf(stored.at).toEqualTypeOf<string>();
  // Null only where the handler may return nothing: that is stored as SQL NULL.
  const nothing = defineJob('t.nothing', z.object({}), async () => undefined);
  const maybe = defineJob('t.maybe', z.object({}), async (): Promise<{ id: string } | undefined> => undefined);
  const voided = defineJob('t.void', z.object({}), async (): Promise<void> => {});
  expectTypeOf<JobOutput<typeof nothing>>().toEqualTypeOf<null>();
  expectTypeOf<JobOutput<typeof maybe>>().toEqualTypeOf<{ id: string } | null>();
  expectTypeOf<JobOutput<typeof voided>>().toEqualTypeOf<null>();
}

export function jsonifiedRules() {
  expectTypeOf<Jsonified<{ a: Date; b: bigint | string; c?: number; d: undefined }>>().toEqualTypeOf<{ a: string; b: string; c?: number }>();
  expectTypeOf<Jsonified<[Date, undefined, number]>>().toEqualTypeOf<[string, null, number]>();
  expectTypeOf<Jsonified<{ toJSON(): { v: 1 } }>>().toEqualTypeOf<{ v: 1 }>();
}

export async function workflows() {
  const crawl = defineJob('p.crawl', z.object({ url: z.string() }), async ({ url }) => ({ url, bytes: 10 }));
  const ship = defineJob('p.ship', z.object({ orderId: z.string() }), async ({ orderId }) => ({ trackingNumber: `TRK-${orderId}` }));

  const run = workflow('p.refresh')
    .job('crawl', crawl, { url: 'https://example.com' })
    .job('ship', ship, { orderId: 'o1' }, { maxAttempts: 2 })
    .job('legacy', 'p.legacy', { anything: true })
    .afterSuccess('ship', ['crawl'])
    .resultStep('ship')
    .build();
  const handle = await enqueueWorkflowRunHandle(prisma, run);
  expectTypeOf(await handle.getResult()).toEqualTypeOf<{ trackingNumber: string }>();
  // @ts-expect-error the result step returns { trackingNumber: string }, not a receipt
  await handle.getResult<{ receiptId: number }>();

  workflow('p.refresh')
    // @ts-expect-error a wrong step payload
    .job('crawl', crawl, { url: 42 });

  // A handle without a known result type returns JSON, and a type argument narrows it.
  const untyped = workflowRunHandle(prisma as never, organizationScope('org_1'), 'id');
  expectTypeOf(await untyped.getResult()).toEqualTypeOf<JsonValue>();
  expectTypeOf(await untyped.getResult<{ receiptId: number }>()).toEqualTypeOf<{ receiptId: number }>();
}

export function otherSchemaLibraries() {
  // zod 3 (3.24+ implements Standard Schema) and valibot: no zod 4 type leaks into the definition.
  const fromZod3 = defineJob('s.zod3', z3.object({ id: z3.string() }), (p) => p.id.length);
  const fromValibot = defineJob('s.valibot', v.object({ id: v.string(), count: v.number() }), (p) => p.count);
  expectTypeOf<JobPayload<typeof fromZod3>>().toEqualTypeOf<{ id: string }>();
  expectTypeOf<JobPayload<typeof fromValibot>>().toEqualTypeOf<{ id: string; count: number }>();
  expectTypeOf<JobOutput<typeof fromValibot>>().toEqualTypeOf<number>();
  // @ts-expect-error valibot says count is a number
  void enqueueJob(prisma, fromValibot, { id: 'a', count: '1' });
  // @ts-expect-error not a schema
  defineJob('s.bad', { parse: (x: unknown) => x }, () => 1);
}

export function readmeExamples() {
  // The README's fan-in example: the join step's output types the run's result.
  expectTypeOf<Awaited<ReturnType<typeof countAllWords>>>().toEqualTypeOf<{ total: number; parts: number; run: string | null }>();
}

export async function catalogAndIntents() {
  const typed = defineJob('c.typed', z.object({ n: z.number() }), () => 1, { priority: 3 });
  // @ts-expect-error a definition's priority is a number
  defineJob('c.bad', z.object({}), () => 1, { priority: 'high' });
  await syncJobDefinitions(prisma, [typed]);
  // @ts-expect-error the catalog is synced from definitions, not type names
  await syncJobDefinitions(prisma, ['c.typed']);
  await enqueueJob(prisma, typed, { n: 1 }, { requireDefinition: true });
  await recordJobEnqueueIntent(prisma, { jobType: 'c.typed', payload: { n: 1 }, idempotencyKey: 'k' });
  // @ts-expect-error an intent needs its idempotency key
  await recordJobEnqueueIntent(prisma, { jobType: 'c.typed', payload: { n: 1 } });
  // The typed form: the definition types the payload, as enqueueJob's does.
  await recordJobEnqueueIntent(prisma, typed, { n: 1 }, { idempotencyKey: 'k', runAt: new Date() });
  // @ts-expect-error a string where the schema says number
  await recordJobEnqueueIntent(prisma, typed, { n: '1' }, { idempotencyKey: 'k' });
  // @ts-expect-error the typed form needs its settings, with the idempotency key
  await recordJobEnqueueIntent(prisma, typed, { n: 1 });
  // @ts-expect-error the key is required there too
  await recordJobEnqueueIntent(prisma, typed, { n: 1 }, { priority: 1 });
}

export async function handlesInATransaction(host: HostPrismaClient) {
  const run = workflow('h.run').job('a', 'h.a', {}).build();
  await host.$transaction(async (tx) => {
    await enqueueWorkflowRunHandle(tx, run, { readWith: host });
    // @ts-expect-error a transaction client needs readWith (test/types/messages/read-with.ts checks the message names it)
    await enqueueWorkflowRunHandle(tx, run);
    // @ts-expect-error options without readWith are no better
    await enqueueWorkflowRunHandle(tx, run, { pollIntervalMs: 100 });
  });
  await enqueueWorkflowRunHandle(host, run);
}

export function transactionalHandlers(host: HostPrismaClient) {
  // ctx.tx is the host's own transaction client: its models, no cast.
  const markPaid = defineJob(
    'h.mark_paid',
    z.object({ orderId: z.string() }),
    async (payload, ctx) => {
      expectTypeOf(ctx.tx).toEqualTypeOf<Parameters<Parameters<HostPrismaClient['$transaction']>[0]>[0]>();
      const order = await ctx.tx.order.update({ where: { id: payload.orderId }, data: { total: 0 } });
      expectTypeOf(order.total).toEqualTypeOf<number>();
      await enqueueJob(ctx.tx, capture, { invoiceId: order.id });
      // @ts-expect-error the host's schema has no invoice model
      await ctx.tx.invoice.findMany();
      // @ts-expect-error it is the transaction client, not the root one
      await ctx.tx.$disconnect();
      expectTypeOf(ctx.idempotencyKey).toEqualTypeOf<string>();
      return { paid: order.id };
    },
    { transaction: host, timeoutSeconds: 30 },
  );
  expectTypeOf<JobOutput<typeof markPaid>>().toEqualTypeOf<{ paid: string }>();
  expectTypeOf<JobPayload<typeof markPaid>>().toEqualTypeOf<{ orderId: string }>();
  // A direct handler's ctx has no transaction.
  defineJob('h.direct', z.object({}), async (_payload, ctx) => {
    // @ts-expect-error no tx without { transaction }
    return ctx.tx;
  });
  // An $extends client's transaction carries its extensions.
  const extended = host.$extends({
    model: {
      order: {
        async paidTotal() {
          return 1;
        },
      },
    },
  });
  defineJob('h.extended', z.object({}), async (_payload, ctx) => ctx.tx.order.paidTotal(), { transaction: extended });
}

export function stepKeys(keys: readonly string[]) {
  workflow('k.run').job('a', 'k.a', {}).job('b', 'k.b', {}).afterSuccess('b', ['a']).afterTerminal('b', ['a']);
  // @ts-expect-error an unknown prerequisite
  workflow('k.run').job('a', 'k.a', {}).afterSuccess('a', ['nope']);
  // @ts-expect-error an unknown prerequisite among known ones
  workflow('k.run').job('a', 'k.a', {}).job('b', 'k.b', {}).afterTerminal('b', ['a', 'nope']);
  // @ts-expect-error an unknown dependent step
  workflow('k.run').job('a', 'k.a', {}).afterSuccess('nope', ['a']);
  // @ts-expect-error a prerequisite added only later
  workflow('k.run').job('b', 'k.b', {}).afterSuccess('b', ['a']).job('a', 'k.a', {});
  // Keys the compiler cannot list (strings, patterns, steps added in a loop) are checked by build() instead.
  const fanned = workflow('k.fan');
  for (const key of keys) fanned.job(key, 'k.part', {});
  fanned.job('join', 'k.join', {}).afterSuccess('join', keys);
  workflow('k.tpl')
    .job(`part-${keys.length}`, 'k.part', {})
    .job('join', 'k.join', {})
    .afterSuccess('join', [`part-${keys.length}`]);
}

interface Shipment {
  orderId: string;
  lines: { sku: string; quantity: number; note?: string }[];
}

export async function jsonPayloads(shipment: Shipment) {
  // @ts-expect-error a Date in the payload's input is not JSON: every enqueue would fail
  defineJob('j.date', z.object({ dueAt: z.date() }), () => 1);
  // @ts-expect-error nor is a bigint
  defineJob('j.bigint', z.object({ amount: z.bigint() }), () => 1);
  // @ts-expect-error nor a Date deep inside, optional or not
  defineJob('j.deep', z.object({ lines: z.array(z.object({ at: z.date().optional() })) }), () => 1);
  // @ts-expect-error valibot's date alike
  defineJob('j.vdate', v.object({ at: v.date() }), () => 1);
  // JSON in, anything out: a string the schema turns into a Date, coercion (input unknown), unknown, records.
  const parsed = defineJob('j.transform', z.object({ at: z.string().transform((text) => new Date(text)) }), (payload) => payload.at.getTime());
  await enqueueJob(prisma, parsed, { at: '2026-12-01T00:00:00Z' });
  defineJob('j.coerce', z.object({ at: z.coerce.date() }), () => 1);
  defineJob('j.unknown', z.unknown(), () => 1);
  defineJob('j.record', z.record(z.string(), z.array(z.number().nullable())), () => 1);
  // A payload typed by the host's own interface still enqueues.
  const ship = defineJob(
    'j.ship',
    z.object({ orderId: z.string(), lines: z.array(z.object({ sku: z.string(), quantity: z.number(), note: z.string().optional() })) }),
    () => 1,
  );
  await enqueueJob(prisma, ship, shipment);
  // A recursive schema: the check stops at its depth limit instead of failing to compile.
  const tree: z.ZodType<TreeNode> = z.lazy(() => z.object({ name: z.string(), children: z.array(tree) }));
  defineJob('j.tree', tree, (node) => node.children.length);
}

interface TreeNode {
  name: string;
  children: TreeNode[];
}
