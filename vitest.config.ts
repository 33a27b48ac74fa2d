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
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/harness/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // A focused or skipped test hides a result: fail the run instead.
    allowOnly: false,
    passWithNoTests: false,
  },
});
