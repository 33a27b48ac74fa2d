/** The pooler project's file rule (vitest.pooler.config.ts): new queue and workflow tests are pooled without a list to keep. */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NOT_YET_POOLED, pooledFiles } from '../../vitest.pooler.config.js';

const names = readdirSync(new URL('../integration/', import.meta.url));

describe('pooled test files', () => {
  it('pools a new queue, workflow, replay or worker test by its name alone', () => {
    expect(
      pooledFiles([
        'queue-brand-new.test.ts',
        'workflow-brand-new.test.ts',
        'replay-x.test.ts',
        'worker-y.test.ts',
        'cli-z.test.ts',
        'dashboard-views.test.ts',
      ]),
    ).toEqual([
      'test/integration/queue-brand-new.test.ts',
      'test/integration/replay-x.test.ts',
      'test/integration/worker-y.test.ts',
      'test/integration/workflow-brand-new.test.ts',
    ]);
  });

  it('pools the paths the issue names, and lists as not yet pooled only files that exist', () => {
    const pooled = pooledFiles(names);
    for (const file of [
      'queue-claim',
      'queue-lifecycle',
      'workflow-execution',
      'workflow-concurrency',
      'replay-requeue',
      'schedules',
      'enqueue-intents',
      'dashboard-api',
      'worker-processing',
      'pooler-worker',
    ]) {
      expect(pooled).toContain(`test/integration/${file}.test.ts`);
    }
    const existing = new Set(names.map((name) => name.replace(/\.test\.ts$/, '')));
    expect([...NOT_YET_POOLED].filter((name) => !existing.has(name))).toEqual([]);
  });
});
