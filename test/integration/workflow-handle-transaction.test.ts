/** A handle enqueued inside the host's transaction outlives it: it reads with the root client it was given. */
import { describe, expect, it } from 'vitest';
import { enqueueWorkflowRunHandle, noOrganizationScope, isRunledgerError, workflow, workflowRunHandle } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (isRunledgerError(error) ? error.code : String(error)),
  );

const definition = (type: string) => workflow(type).job('a', `${type}.a`, {}).resultStep('a').build();
const runCount = async (type: string) =>
  (await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE workflow_type = ${type}`)[0]!.n;

describe('workflow run handles and the host transaction', () => {
  it('reads status and result after the transaction that enqueued the run has committed', async () => {
    const handle = await db.prisma.$transaction((tx) => enqueueWorkflowRunHandle(tx, definition('htx.commit'), { readWith: db.prisma, pollIntervalMs: 20 }));
    expect(await handle.getStatus()).toBe('RUNNING');
    const result = handle.getResult({ timeoutMs: 20_000 });
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: { total: 7 } }));
    expect(await result).toEqual({ total: 7 });
    expect(await handle.getStatus()).toBe('SUCCEEDED');
  });

  it('reports workflow.run_not_found, not a database error, when that transaction rolled back', async () => {
    let handle: Awaited<ReturnType<typeof enqueueWorkflowRunHandle>> | undefined;
    await expect(
      db.prisma.$transaction(async (tx) => {
        handle = await enqueueWorkflowRunHandle(tx, definition('htx.rollback'), { readWith: db.prisma });
        throw new Error('the host changed its mind');
      }),
    ).rejects.toThrow('the host changed its mind');
    expect(await codeOf(handle!.getStatus())).toBe('workflow.run_not_found');
    expect(await codeOf(handle!.getResult({ timeoutMs: 100 }))).toBe('workflow.run_not_found');
  });

  it('refuses a transaction client to read with, before writing anything, and leaves the transaction usable', async () => {
    const outcome = await db.prisma.$transaction(async (tx) => {
      const refused = await codeOf(
        // @ts-expect-error: a transaction client needs `readWith`, the types say so.
        enqueueWorkflowRunHandle(tx, definition('htx.refused')),
      );
      const refusedReadWith = await codeOf(
        // @ts-expect-error: `readWith` must be a root client.
        enqueueWorkflowRunHandle(tx, definition('htx.refused'), { readWith: tx }),
      );
      // @ts-expect-error: so must workflowRunHandle's client.
      const handleOnTx = () => workflowRunHandle(tx, noOrganizationScope(), '00000000-0000-0000-0000-000000000000');
      expect(handleOnTx).toThrow(expect.objectContaining({ code: 'workflow.handle_requires_root_client', field: 'db' }));
      // The host's transaction is still usable: nothing was sent, nothing failed in it.
      const [row] = await tx.$queryRaw<{ one: number }[]>`SELECT 1 AS one`;
      return { refused, refusedReadWith, one: row!.one };
    });
    expect(outcome).toEqual({ refused: 'workflow.handle_requires_root_client', refusedReadWith: 'workflow.handle_requires_root_client', one: 1 });
    expect(await runCount('htx.refused')).toBe(0);
  });

  it('still takes a root client without readWith', async () => {
    const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('htx.root').external('e').build());
    expect(await handle.getStatus()).toBe('WAITING_FOR_EXTERNAL');
    expect(handle.enqueued.disposition).toBe('inserted');
  });
});
