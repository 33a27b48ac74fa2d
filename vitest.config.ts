import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  // Example code imports the package by name, as a host application would.
  resolve: {
    alias: [
      { find: /^runledger\/testing$/, replacement: src('testing/index.ts') },
      { find: /^runledger$/, replacement: src('index.ts') },
    ],
  },
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // A focused or skipped test hides a result: fail the run instead.
    allowOnly: false,
    passWithNoTests: false,
    // A test that ran no assertion cannot fail: fail it instead.
    expect: { requireAssertions: true },
    // Two projects, so `npx vitest run --project unit` needs no database: only the integration project has the
    // global setup that starts PostgreSQL (test/harness/global-setup.ts). `npm test` runs both.
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], globalSetup: ['test/harness/global-setup.ts'] } },
    ],
  },
});
