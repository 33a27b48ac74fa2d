/**
 * `npm run demo`: a weekly market report, end to end, on a real PostgreSQL.
 *
 *   fetch-news ┐
 *   fetch-rates├─▶ summarize ─▶ approval (a human, external) ─▶ publish (result)
 *   fetch-sales┘└─▶ audit (runs whatever the fetches' outcome)
 *
 * The fetches share one execution resource (the market-data provider allows
 * one call at a time per region), and the run holds an active key, so a second
 * request for the same region's report gets the running one instead of a
 * duplicate run.
 *
 * Uses DATABASE_URL when set; otherwise starts an embedded PostgreSQL (no
 * Docker, no setup) and removes it at the end. Exits 0 leaving nothing running.
 */
import http from 'node:http';
import {
  adminScope,
  completeExternalWorkflowStep,
  createDashboard,
  compareAndReplaySucceededJob,
  createWorker,
  createWorkflowRunListener,
  enqueueJob,
  enqueueOrGetActiveWorkflowRun,
  getJob,
  jobHandle,
  noOrganizationScope,
  listWorkflowSteps,
  migrate,
  workflow,
  workflowRunHandle,
  type WorkerLogger,
  type WorkflowStep,
} from 'runledger';
import { startPostgresServer } from 'runledger/testing';
import { createPrismaClient } from '../src/client/connect.js';
import { cliCommand, elapsed, shellLine, stepChanges, timeline } from './display.js';
import { handlers } from './handlers.js';
import { buildDashboardAssets } from '../scripts/build-dashboard.js';

const say = (line = '') => process.stdout.write(`${line}\n`);

/** The worker's logger is pluggable; this one prints warnings and errors on one line each. */
const compactLogger: WorkerLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (message, fields) => say(`           [worker] ${message} ${fields?.code ? `(${String(fields.code)})` : ''}`),
  error: (message, fields) => say(`           [worker] ${message} ${JSON.stringify(fields ?? {})}`),
};

async function main(): Promise<void> {
  const t0 = Date.now();
  say('runledger demo: a weekly market report workflow\n');
  const server = await startPostgresServer({ url: process.env.DATABASE_URL, containers: false });
  say(`• PostgreSQL: ${server.kind === 'embedded' ? 'embedded (started for this demo)' : 'DATABASE_URL'}  ${elapsed(t0)}`);
  const prisma = createPrismaClient(server.url, { max: 8 });
  const worker = createWorker({
    db: prisma,
    listenConnectionString: server.url,
    handlers,
    concurrency: 4,
    leaseSeconds: 30,
    pollIntervalMs: 500,
    logger: compactLogger,
  });
  const listener = await createWorkflowRunListener({ connectionString: server.url });
  try {
    const migrated = await migrate({ connectionString: server.url });
    say(`• migrations: ${migrated.applied.length} applied, ${migrated.alreadyApplied.length} already there  ${elapsed(t0)}`);
    await worker.start();
    say(`• worker ${worker.workerId} started (concurrency 4, LISTEN/NOTIFY wake-ups, polling as the safety net)\n`);

    const region = 'EMEA';
    // One call at a time to the provider per region: the fetch steps share an execution resource.
    const provider = { resource: `market-data:${region}` };
    const report = {
      ...workflow('reports.weekly_market', { region, requestedBy: 'demo' })
        .job('fetch-news', 'market.fetch_feed', { feed: 'news', region }, provider)
        .job('fetch-rates', 'market.fetch_feed', { feed: 'rates', region }, { ...provider, maxAttempts: 3 })
        .job('fetch-sales', 'market.fetch_feed', { feed: 'sales', region }, provider)
        .job('summarize', 'market.summarize', { region })
        .afterSuccess('summarize', ['fetch-news', 'fetch-rates', 'fetch-sales'])
        .job('audit', 'market.audit_fetches', { region })
        .afterTerminal('audit', ['fetch-news', 'fetch-rates', 'fetch-sales'])
        .external('approval')
        .afterSuccess('approval', ['summarize'])
        .job('publish', 'report.publish', { region, channel: 'email' })
        .afterSuccess('publish', ['approval'])
        .resultStep('publish')
        .build(),
      // At most one live weekly report per region (released when the run ends).
      activeKey: `weekly-market:${region}:${t0}`,
    };
    const enqueued = await enqueueOrGetActiveWorkflowRun(prisma, report);
    const duplicate = await enqueueOrGetActiveWorkflowRun(prisma, report);
    const run = workflowRunHandle<{ url: string }>(prisma, noOrganizationScope(), enqueued.workflowRunId, { listener });
    say(
      `Run ${run.workflowRunId} ${enqueued.outcome} (${enqueued.status}); a second request for the region → ${duplicate.outcome}, the same run: ${duplicate.workflowRunId === enqueued.workflowRunId}.`,
    );
    say('Step changes as they happen (the fetches take turns on the provider):');

    // Watch the steps; when the approval step waits, an editor approves it.
    const seen = new Map<string, string>();
    let approved = false;
    let steps: WorkflowStep[] = [];
    const deadline = Date.now() + 45_000;
    for (;;) {
      steps = (await listWorkflowSteps(prisma, { scope: noOrganizationScope(), workflowRunId: run.workflowRunId, limit: 500 })).items;
      for (const line of stepChanges(seen, steps, t0)) say(line);
      const approval = steps.find((s) => s.stepKey === 'approval');
      if (!approved && approval?.status === 'WAITING_FOR_EXTERNAL') {
        approved = true;
        const summary = steps.find((s) => s.stepKey === 'summarize')?.output as { headline?: string } | null;
        say(`  ${elapsed(t0)}  ✍ editor reads "${summary?.headline ?? ''}" and approves`);
        await completeExternalWorkflowStep(prisma, {
          workflowRunId: run.workflowRunId,
          stepKey: 'approval',
          scope: noOrganizationScope(),
          outcome: { status: 'succeeded', output: { approvedBy: 'editor@example.test' } },
          statusReason: 'approved in the demo',
        });
        continue;
      }
      const status = await run.getStatus();
      if (status !== 'RUNNING' && status !== 'WAITING_FOR_EXTERNAL') break;
      if (Date.now() > deadline) throw new Error('the demo workflow did not finish within 45 s');
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    steps = (await listWorkflowSteps(prisma, { scope: noOrganizationScope(), workflowRunId: run.workflowRunId, limit: 500 })).items;
    for (const line of stepChanges(seen, steps, t0)) say(line);

    const result = await run.getResult({ timeoutMs: 10_000 });
    const finished = await run.getRun();
    say(
      `\nRun ${finished.status} in ${((finished.finishedAt!.getTime() - finished.createdAt.getTime()) / 1000).toFixed(2)}s. Result (the publish step's output):`,
    );
    say(`  ${JSON.stringify(result)}`);
    say("\nTimeline from the run's start (░ waiting in the queue, █ running):");
    for (const line of timeline(steps, finished.createdAt)) say(line);

    // A direct job, then an idempotent replay of it (e.g. after a mail outage).
    say('\nA direct job, replayed idempotently:');
    const notify = await enqueueJob(prisma, { jobType: 'report.notify_subscribers', payload: { url: result.url, audience: 1250 } });
    // A job handle waits for one job's outcome (polling; a failure or cancellation is a coded error).
    const notified = await jobHandle(prisma, { jobId: notify.jobId, scope: noOrganizationScope() }).getResult({ timeoutMs: 15_000 });
    say(`  ${elapsed(t0)}  notify job ${notify.jobId} SUCCEEDED, output ${JSON.stringify(notified)}`);
    const replayRequest = {
      scope: noOrganizationScope(),
      sourceJobId: notify.jobId,
      expectedRunNumber: 1,
      replayRequestKey: 'mail-outage-ticket-4711',
      reason: 'subscribers report missing mail',
    };
    const first = await compareAndReplaySucceededJob(prisma, replayRequest);
    const again = await compareAndReplaySucceededJob(prisma, replayRequest);
    if (first.kind !== 'replayed' || again.kind !== 'replayed') throw new Error('replay was refused');
    say(
      `  ${elapsed(t0)}  replay → job ${first.replay.jobId} (${first.replay.disposition}); same request again → ${again.replay.jobId} (${again.replay.disposition})`,
    );
    await jobHandle(prisma, { jobId: first.replay.jobId, scope: noOrganizationScope() }).getResult({ timeoutMs: 15_000 });
    const source = await getJob(prisma, { scope: noOrganizationScope(), jobId: notify.jobId });
    say(`  ${elapsed(t0)}  replay SUCCEEDED; the source is untouched (${source.status}, run ${source.runNumber})`);
    if (server.kind === 'url') {
      say(`\nInspect it with the CLI (DATABASE_URL is already set): ${shellLine(cliCommand('runs', 'show', run.workflowRunId))}`);
      say('  (in an app that installed the package, the same command is `npx runledger runs show <runId>`)');
    }
    if (process.env.RUNLEDGER_DEMO_DASHBOARD === '1') await serveDashboard(prisma, server.url, run.workflowRunId);
  } finally {
    await worker.stop({ drainMs: 5_000 });
    await listener.close();
    await prisma.$disconnect();
    await server.stop();
  }
  say(`\nDone in ${elapsed(t0).trim()}; worker stopped, connections closed${server.kind === 'embedded' ? ', embedded PostgreSQL stopped' : ''}.`);
  say("\nOpen the web dashboard on the demo's data:");
  say('  RUNLEDGER_DEMO_DASHBOARD=1 npm run demo     # runs the demo again, then serves http://127.0.0.1:4000/ until Ctrl-C');
  say(`  # or, on your own database (DATABASE_URL): ${shellLine(cliCommand('dashboard', '--port', '4000'))}`);
  say('  # (in an app that installed the package: npx runledger dashboard --port 4000)');
}

/** The demo's data in the web dashboard, on 127.0.0.1 (admin scope: a local look, no login) until Ctrl-C. */
async function serveDashboard(prisma: ReturnType<typeof createPrismaClient>, url: string, workflowRunId: string): Promise<void> {
  await buildDashboardAssets();
  const dashboard = createDashboard({ db: prisma, listenConnectionString: url, authorize: () => adminScope() });
  const httpServer = http.createServer(dashboard);
  await new Promise<void>((resolve) => httpServer.listen(Number(process.env.PORT ?? 4000), '127.0.0.1', resolve));
  say(`\nDashboard: http://127.0.0.1:${Number(process.env.PORT ?? 4000)}/#/runs/${workflowRunId}  (Ctrl-C stops it)`);
  await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  await dashboard.close();
  httpServer.closeAllConnections();
  await new Promise<void>((resolve) => httpServer.close(() => resolve()));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('demo failed:', error);
    process.exit(1);
  },
);
