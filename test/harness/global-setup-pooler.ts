/** The pooler project's setup: the shared harness, with every file's Prisma clients through PgBouncer (required). */
import type { TestProject } from 'vitest/node';
import { setupHarness } from './harness-setup.js';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return setupHarness(project, { viaPooler: true });
}
