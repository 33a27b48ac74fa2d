import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { PACKAGED_MIGRATIONS_DIR } from '../../src/migrate/migration-files.js';
import { REQUIRED_MIGRATION } from '../../src/migrate/schema-version.js';

describe('REQUIRED_MIGRATION', () => {
  it("names the newest packaged migration, the schema the worker's start() asks for", async () => {
    const names = (await readdir(PACKAGED_MIGRATIONS_DIR, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    expect(REQUIRED_MIGRATION).toBe(names.at(-1));
  });
});
