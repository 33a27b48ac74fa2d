/** The default project's setup (see harness-setup.ts): the pooler runs beside the server, for the pooler's own tests. */
import type { TestProject } from 'vitest/node';
import { setupHarness } from './harness-setup.js';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return setupHarness(project, { viaPooler: false });
}
