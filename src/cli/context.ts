/** What every CLI command receives. */
import type { RunledgerPrismaClient } from '../client/connect.js';
import type { Scope } from '../db/scope.js';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';

export interface CliContext {
  json: boolean;
  scope: Scope;
  /** Opens the database lazily; closed after the command. */
  db(): RunledgerPrismaClient;
  print(human: string, data: unknown): void;
  connectionString(): string;
  /** --connect-timeout (or $RUNLEDGER_CONNECT_TIMEOUT), in ms. */
  connectTimeoutMs(): number;
}

/**
 * Wrong usage of the CLI itself (exit code 2). A ValidationError, so `--json`
 * prints it in the same shape as every other error; `field` names the option
 * or argument at fault.
 */
export class UsageError extends ValidationError {
  constructor(message: string, options: { code?: ErrorCode; field?: string } = {}) {
    super(options.code ?? 'cli.usage', options.field ?? 'argv', message);
  }
}
