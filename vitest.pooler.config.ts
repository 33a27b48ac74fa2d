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
import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * Which files run pooled, as a rule rather than a list to keep: every test file of the queue, workflow,
 * replay, worker, schedule and intent paths (by name prefix), the pooler's own, and the dashboard API, so a
 * new `queue-*.test.ts` or `workflow-*.test.ts` runs through PgBouncer without anyone adding it here.
 */
export const POOLED_FILE = /^(queue|workflow|replay|worker|schedules|enqueue|pooler)(-.+)?\.test\.ts$|^dashboard-api\.test\.ts$/;

/**
 * Files of those paths that have not yet been run through the pooler (they predate the rule: the pooled set
 * was a hand-kept list until then). A name leaves this list once its file passes under `npm run
 * test:pooler`; a new file never joins it without a reason written beside it.
 */
export const NOT_YET_POOLED = new Set([
  'enqueue-isolation',
  'queue-claim-generic-plan',
  'queue-claim-plan',
  'queue-complete-settled',
  'queue-enqueue-backoff',
  'queue-enqueue',
  'queue-events',
  'queue-fast-path',
  'queue-idempotency',
  'queue-lease-clock',
  'queue-reads',
  'queue-release',
  'queue-resources',
  'queue-retry',
  'queue-scope',
  'queue-validation',
  'queue-workflow-hooks',
  'replay-concurrency',
  'replay-validation',
  'schedules-targets',
  'worker-batching',
  'worker-buffer',
  'worker-claim-size',
  'worker-crash',
  'worker-declared-schedules',
  'worker-lease',
  'worker-options',
  'worker-outage',
  'worker-registry',
  'worker-schedules',
  'worker-shutdown',
  'worker-slots',
  'worker-storable',
  'worker-transactional-crash',
  'worker-transactional',
  'workflow-active-keys',
  'workflow-append-races',
  'workflow-append',
  'workflow-enqueue-batch',
  'workflow-enqueue',
  'workflow-handle-transaction',
  'workflow-handle',
  'workflow-idempotency',
  'workflow-property',
  'workflow-recovery-lineage',
  'workflow-result-bounds',
  'workflow-step-inputs',
  'workflow-step-notify',
  'workflow-step-start',
]);

export function pooledFiles(names: readonly string[]): string[] {
  return names
    .filter((name) => POOLED_FILE.test(name) && !NOT_YET_POOLED.has(name.replace(/\.test\.ts$/, '')))
    .sort()
    .map((name) => `test/integration/${name}`);
}

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    // One project of its own: the base config's unit/integration split (and its global setup) does not apply.
    projects: undefined,
    include: pooledFiles(readdirSync(new URL('./test/integration/', import.meta.url))),
    globalSetup: ['test/harness/global-setup-pooler.ts'],
  },
});
