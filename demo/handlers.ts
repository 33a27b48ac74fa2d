/** The demo's job handlers: what an application registers with its worker. */
import { z } from 'zod';
import { defineJob, RetryableError } from 'runledger';

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        return reject(signal.reason);
      },
      { once: true },
    );
  });

/** Fetches one market feed. The "rates" feed is flaky: its first attempt fails and is retried. */
export const fetchFeed = defineJob('market.fetch_feed', z.object({ feed: z.string(), region: z.string() }), async ({ feed, region }, ctx) => {
  await pause(150 + feed.length * 40, ctx.signal);
  if (feed === 'rates' && ctx.attempt === 1) {
    throw new RetryableError('rates provider timed out', { code: 'feed.upstream_timeout', retryNotBefore: new Date(Date.now() + 300) });
  }
  return { feed, region, records: 100 + feed.length * 17 };
});

/** Fan-in: summarises every feed (it runs only after all of them succeeded). */
export const summarize = defineJob('market.summarize', z.object({ region: z.string() }), async ({ region }, ctx) => {
  // Stage and progress are persisted (lease-fenced) and shown by `runledger runs show` and the dashboard.
  await ctx.setStage('aggregating');
  await pause(150, ctx.signal);
  await ctx.progress(3, 3);
  await ctx.setStage('writing headline');
  await pause(100, ctx.signal);
  return { region, headline: `${region}: demand up 4.2%, rates steady`, confidence: 0.87 };
});

/** Runs after the fetches whatever their outcome (an ON_TERMINAL dependency). */
export const auditFetches = defineJob('market.audit_fetches', z.object({ region: z.string() }), async ({ region }) => ({ region, audited: true }));

/** The result step: publishes the approved report. */
export const publish = defineJob('report.publish', z.object({ region: z.string(), channel: z.string() }), async ({ region, channel }, ctx) => {
  await pause(200, ctx.signal);
  return { url: `https://reports.example.test/${region.toLowerCase()}/weekly`, channel, publishedBy: ctx.workerId };
});

/** A direct job (not part of the workflow): tells subscribers about the report. */
export const notifySubscribers = defineJob('report.notify_subscribers', z.object({ url: z.string(), audience: z.number().int() }), async ({ audience }) => {
  return { delivered: audience };
});

export const handlers = [fetchFeed, summarize, auditFetches, publish, notifySubscribers];
