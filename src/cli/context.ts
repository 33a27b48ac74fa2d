/** What every CLI command receives. */
import type { RunledgerPrismaClient } from '../client/connect.js';
import type { Scope } from '../db/scope.js';

export interface CliContext {
  json: boolean;
  scope: Scope;
  /** Opens the database lazily; closed after the command. */
  db(): RunledgerPrismaClient;
  print(human: string, data: unknown): void;
  connectionString(): string;
}

/** Wrong usage of the CLI itself (exit code 2). */
export class UsageError extends Error {}
