// Enqueueing a workflow run handle inside a transaction without `readWith`: the error names readWith.
import { enqueueWorkflowRunHandle, workflow } from 'runledger';
import type { PrismaClient } from '../../fixtures/host-app/generated/client.js';

declare const prisma: PrismaClient;
const run = workflow('m.run').job('a', 'm.a', {}).build();

export async function withoutReadWith() {
  await prisma.$transaction(async (tx) => {
    await enqueueWorkflowRunHandle(tx, run); // error: readWith
    await enqueueWorkflowRunHandle(tx, run, { pollIntervalMs: 100 }); // error: readWith
    await enqueueWorkflowRunHandle(tx, run, { readWith: prisma });
  });
  await enqueueWorkflowRunHandle(prisma, run);
}
