/**
 * `npm run cli -- <command> [options]`: the `runledger` operator CLI from a
 * clone of this repository, run from source (`npx runledger` only exists
 * where the package is installed: a clone has no `runledger` binary on its
 * path). Generates the Prisma client if a fresh clone has not yet, and for
 * `dashboard` bundles the page beside the source first, as the tests do.
 *
 *   DATABASE_URL=postgresql://... npm run cli -- runs show <workflowRunId>
 *   DATABASE_URL=postgresql://... npm run cli -- dashboard --port 4000
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
if (!existsSync(`${root}src/generated`)) {
  const generated = spawnSync(process.execPath, ['scripts/generate.mjs'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (generated.status !== 0) process.exit(generated.status ?? 1);
}
if (process.argv.slice(2).includes('dashboard')) {
  const { buildDashboardAssets } = await import('./build-dashboard.js');
  await buildDashboardAssets();
}
const { main } = await import('../src/cli/main.js');
process.exitCode = await main(process.argv);
