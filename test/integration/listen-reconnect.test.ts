/**
 * The library's one LISTEN connection (src/notify/listen-client.ts): shared
 * by workers and run listeners, reconnecting forever with backoff capped at
 * 2 s. Its backend is killed again and again, and its network cut for longer
 * than several backoff steps; after each, LISTEN is back within about 2 s,
 * every subscriber is told to look once, and notifications flow again.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createWorkflowRunListener, defineJob, enqueueJob, enqueueWorkflowRunHandle, workflow, type RunledgerError } from '../../src/index.js';
import { listen, LISTEN_APPLICATION_NAME, LISTEN_RECONNECT_MAX_MS, listenConnectionStats, reconnectDelayMs } from '../../src/notify/listen-client.js';
import { useTestDatabase } from '../harness/database.js';
import { startFaultProxy } from '../harness/fault-proxy.js';
import { useWorkers } from '../harness/workers.js';
import { nextEvent, within } from '../fixtures/worker-support/latches.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const CHANNEL = 'runledger_test_reconnect';

/** Something that happens repeatedly; `next()` is the next occurrence after the call. */
function occurrences<T>(): { fire(value: T): void; next(predicate?: (value: T) => boolean): Promise<T> } {
  const waiters = new Set<{ predicate: (value: T) => boolean; resolve: (value: T) => void }>();
  return {
    fire(value) {
      for (const waiter of [...waiters]) {
        if (!waiter.predicate(value)) continue;
        waiters.delete(waiter);
        waiter.resolve(value);
      }
    },
    next(predicate = () => true) {
      return new Promise((resolve) => waiters.add({ predicate, resolve }));
    },
  };
}

async function listenerPids(): Promise<number[]> {
  const rows = await db.prisma.$queryRaw<{ pid: number }[]>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ${LISTEN_APPLICATION_NAME}`;
  return rows.map((row) => row.pid);
}

describe('the shared LISTEN connection', () => {
  it('never waits more than 2 s between attempts, and half of that at least once it has failed a few times', () => {
    for (let failures = 1; failures <= 60; failures += 1) {
      expect(reconnectDelayMs(failures, () => 1)).toBeLessThanOrEqual(LISTEN_RECONNECT_MAX_MS);
      expect(reconnectDelayMs(failures, () => 0)).toBeGreaterThanOrEqual(50);
    }
    expect(reconnectDelayMs(60, () => 0)).toBe(LISTEN_RECONNECT_MAX_MS / 2);
  });

  it('comes back after its backend is killed five times in a row, and delivers notifications after each', async () => {
    const listening = occurrences<number>();
    const notified = occurrences<string>();
    const errors: RunledgerError[] = [];
    const subscription = listen(db.url, CHANNEL, {
      onNotification: (payload) => notified.fire(payload),
      onListening: () => listening.fire(Date.now()),
      onError: (error) => errors.push(error),
    });
    try {
      expect(await subscription.ready).toBe(true);
      let previous = await listenerPids();
      expect(previous).toHaveLength(1);
      for (let round = 1; round <= 5; round += 1) {
        const back = listening.next();
        const killedAt = Date.now();
        await db.prisma.$queryRaw`SELECT pg_terminate_backend(${previous[0]!}::int)`;
        const backAt = await within(back, 5_000, `LISTEN back after kill ${round}`);
        expect(backAt - killedAt).toBeLessThan(LISTEN_RECONNECT_MAX_MS + 500);
        expect(subscription.listening).toBe(true);

        const payload = `round-${round}`;
        const heard = notified.next((value) => value === payload);
        await db.prisma.$executeRaw`SELECT pg_notify(${CHANNEL}, ${payload})`;
        await within(heard, 5_000, `notification after kill ${round}`);

        const current = await listenerPids();
        expect(current).toHaveLength(1);
        expect(current[0]).not.toBe(previous[0]);
        previous = current;
      }
      expect(errors.length).toBeGreaterThanOrEqual(5);
      expect(new Set(errors.map((error) => error.code))).toEqual(new Set(['database.unavailable']));
    } finally {
      await subscription.close();
    }
    expect(listenConnectionStats(db.url)).toBeUndefined();
  });

  it('notices a network that silently stopped answering, and comes back once it answers again', async () => {
    const proxy = await startFaultProxy(db.url);
    const listening = occurrences<number>();
    const failed = occurrences<RunledgerError>();
    const notified = occurrences<string>();
    const subscription = listen(proxy.url, CHANNEL, {
      onNotification: (payload) => notified.fire(payload),
      onListening: () => listening.fire(Date.now()),
      onError: (error) => failed.fire(error),
    });
    try {
      expect(await subscription.ready).toBe(true);
      const frozenAt = Date.now();
      const noticed = failed.next();
      proxy.freeze(); // no RST, no FIN: only the health check can tell
      expect((await within(noticed, 30_000, 'the dead connection noticed')).code).toBe('database.unavailable');
      // A check is due at most 15 s after the freeze and given 5 s to answer; the rest is slack for a loaded
      // machine (24.6 s seen under a full suite on two cores). TCP alone would take minutes.
      expect(Date.now() - frozenAt).toBeLessThan(29_000);

      const back = listening.next();
      await proxy.restore();
      await within(back, 10_000, 'LISTEN back after the network answers again');
      const heard = notified.next((payload) => payload === 'after-freeze');
      await db.prisma.$executeRaw`SELECT pg_notify(${CHANNEL}, 'after-freeze')`;
      await within(heard, 5_000, 'notification after the freeze');
    } finally {
      await subscription.close();
      await proxy.close();
    }
  }, 60_000);

  it('serves a worker and a run listener over one session, and both hear again within 2 s of a 5 s network outage', async () => {
    const proxy = await startFaultProxy(db.url);
    const runListenerErrors: RunledgerError[] = [];
    const runListener = await createWorkflowRunListener({ connectionString: proxy.url, onError: (error) => runListenerErrors.push(error) });
    const listening = occurrences<number>();
    const probe = listen(proxy.url, CHANNEL, { onNotification: () => undefined, onListening: () => listening.fire(Date.now()) });
    const handler = defineJob('reconnect.step', z.object({}), async () => ({ ok: true }));
    // Polling a minute away: only notifications (and the look after a reconnect) make anything happen quickly.
    const worker = await startWorker({ handlers: [handler], listen: true, listenConnectionString: proxy.url, pollIntervalMs: 60_000 });
    try {
      await probe.ready;
      expect(await listenerPids()).toHaveLength(1);
      expect(listenConnectionStats(proxy.url)?.subscribers).toBe(3);

      await proxy.cut();
      const failuresAtCut = listenConnectionStats(proxy.url)!.failures;
      // The outage itself: long enough for the backoff to reach its cap.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      // It kept trying all along (100, 200, 400, 800, 1600, 2000 ms...), not once.
      expect(listenConnectionStats(proxy.url)!.failures - failuresAtCut).toBeGreaterThanOrEqual(5);
      expect(runListener.listening).toBe(false);

      const back = listening.next();
      const restoredAt = Date.now();
      await proxy.restore();
      const backAt = await within(back, 5_000, 'LISTEN back after the outage');
      expect(backAt - restoredAt).toBeLessThan(LISTEN_RECONNECT_MAX_MS + 500);
      expect(runListener.listening).toBe(true);
      expect(await listenerPids()).toHaveLength(1);

      // A run whose job only a notification can start, and whose end only a notification can report in time.
      const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('reconnect.run').job('a', 'reconnect.step', {}).resultStep('a').build(), {
        listener: runListener,
        pollIntervalMs: 60_000,
      });
      const startedAt = Date.now();
      expect(await handle.getResult({ timeoutMs: 30_000 })).toEqual({ ok: true });
      expect(Date.now() - startedAt).toBeLessThan(4_000);

      const direct = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'reconnect.step', 4_000);
      await enqueueJob(db.prisma, { jobType: 'reconnect.step', payload: {} });
      await direct;
      expect(new Set(runListenerErrors.map((error) => error.code))).toEqual(new Set(['database.unavailable']));
    } finally {
      await worker.stop({ drainMs: 0 });
      await probe.close();
      await runListener.close();
      await proxy.close();
    }
    expect(listenConnectionStats(proxy.url)).toBeUndefined();
  });

  it('createWorkflowRunListener refuses bad options, and rejects when its first connection fails, leaving nothing reconnecting (it resolved and retried for ever before)', async () => {
    const refusal = (options: unknown) =>
      createWorkflowRunListener(options as never).then(
        async (listener) => {
          await listener.close();
          return 'created';
        },
        (e: RunledgerError & { field?: string }) => `${e.code} ${e.field ?? ''}`.trim(),
      );
    expect(await refusal(undefined)).toBe('listen.invalid_options options');
    expect(await refusal({})).toBe('listen.invalid_options connectionString');
    expect(await refusal({ connectionString: 'not a url' })).toBe('listen.invalid_options connectionString');
    expect(await refusal({ connectionString: db.url, onError: 5 })).toBe('listen.invalid_options onError');

    const unreachable = 'postgresql://nobody@127.0.0.1:1/none';
    const errors: RunledgerError[] = [];
    const error = await createWorkflowRunListener({ connectionString: unreachable, onError: (e) => errors.push(e) }).catch((e: RunledgerError) => e);
    expect(error).toMatchObject({ code: 'listen.connection_failed', category: 'unavailable' });
    expect((error as RunledgerError).cause).toMatchObject({ code: 'database.unavailable' });
    // The rejection is the report; nothing is left trying to connect.
    expect(errors).toEqual([]);
    expect(listenConnectionStats(unreachable)).toBeUndefined();
    const noSuchDatabase = Object.assign(new URL(db.url), { pathname: '/runledger_no_such_database' }).toString();
    expect(await refusal({ connectionString: noSuchDatabase })).toBe('listen.connection_failed');
    expect(listenConnectionStats(noSuchDatabase)).toBeUndefined();

    const listener = await createWorkflowRunListener({ connectionString: db.url });
    expect(listener.listening).toBe(true);
    await listener.close();
  });
});
