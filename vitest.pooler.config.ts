/**
 * The pooler project (`npm run test:pooler`, run by .ci/run): a focused set of
 * test files again, with every Prisma client of the harness through a
 * transaction-mode PgBouncer (test/harness/global-setup-pooler.ts): enqueue in
 * a host transaction, claim, complete, fail, workflows with fan-in, cancel,
 * replay, recovery, schedules, intents, metrics, the dashboard's reads and the
 * worker (LISTEN direct, everything else pooled). The chaos run has its own
 * `--pooler` flag. The pooler's own tests (test/integration/pooler-*) run in
 * the default project too.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

const FILES = [
  'queue-transaction',
  'queue-lifecycle',
  'queue-cancel',
  'queue-claim',
  'queue-reap',
  'workflow-execution',
  'workflow-concurrency',
  'workflow-cancel',
  'workflow-external',
  'replay-succeeded',
  'replay-requeue',
  'workflow-recovery',
  'schedules',
  'enqueue-intents',
  'queue-metrics',
  'dashboard-api',
  'worker-processing',
  'worker-outcomes',
  'pooler-session-state',
  'pooler-worker',
];

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    // One project of its own: the base config's unit/integration split (and its global setup) does not apply.
    projects: undefined,
    include: FILES.map((file) => `test/integration/${file}.test.ts`),
    globalSetup: ['test/harness/global-setup-pooler.ts'],
  },
});
