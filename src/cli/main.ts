#!/usr/bin/env node
/**
 * The `runledger` operator CLI. Human output by default, `--json` for scripts.
 * Exit codes: 0 success, 1 internal error, 2 invalid input, 3 not found,
 * 4 conflict, 5 database unavailable.
 */
import { Command, CommanderError, Option } from 'commander';
import pg from 'pg';
import { createPrismaClient, type RunledgerPrismaClient } from '../client/connect.js';
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { isRunledgerError, type ErrorCategory, type RunledgerError } from '../errors/runledger-error.js';
import { migrate } from '../migrate/migrate.js';
import { adminScope, noOrganizationScope, organizationScope, type Scope } from '../db/scope.js';
import { registerJobCommands } from './jobs.js';
import { registerRunCommands } from './runs.js';
import { registerReapCommand } from './reap.js';
import { registerDoctorCommand } from './doctor.js';
import { registerScheduleCommands } from './schedules.js';
import { registerPurgeCommand } from './purge.js';
import { registerStatsCommand } from './stats.js';
import { registerDefinitionCommands } from './definitions.js';
import { registerLimitCommands } from './limits.js';
import { registerWorkerCommand } from './worker.js';
import { registerDashboardCommand } from './dashboard.js';
import { UsageError, type CliContext } from './context.js';
import { integerOption } from './options.js';

/**
 * How long the CLI waits for PostgreSQL to accept a connection: a server (or
 * a proxy, a firewall) that accepts TCP and never answers would otherwise
 * hang a script for ever. Long-running statements are not bounded: purge,
 * doctor and the dashboard may legitimately run for minutes.
 */
const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;
const MAX_CONNECT_TIMEOUT_SECONDS = 3_600;

const EXIT_CODES: Record<ErrorCategory, number> = { internal: 1, validation: 2, not_found: 3, conflict: 4, unavailable: 5 };
const EXIT_CODES_HELP = `
Exit codes:
  0  success
  1  internal error
  2  invalid input (or wrong usage)
  3  not found
  4  conflict
  5  database unavailable (refused, lost or timed-out connection, not accepting
     connections, or no such database): retry later, or check --database-url
Errors are one line on stderr (the error's JSON with --json); RUNLEDGER_DEBUG=1 adds the internal detail.`;

/** `argv` lets usage errors raised before `--json` is parsed still honour it. */
export function buildProgram(argv: readonly string[] = []): { program: Command; context: CliContext; close(): Promise<void> } {
  const program = new Command('runledger');
  // With --json, stderr carries exactly one JSON error object (printed by main()), so commander's own text is held back.
  const jsonRequested = () => options().json || argv.includes('--json');
  const writeErr = (text: string) => void (jsonRequested() || process.stderr.write(text));
  // Before any subcommand is added: commander copies these settings into each subcommand when it is created,
  // so a usage error in `runs show` (missing argument, unknown option) throws to main() instead of calling process.exit(1).
  program
    .exitOverride()
    .configureOutput({ writeErr, outputError: (text) => writeErr(text) })
    .showHelpAfterError()
    .description('Operate runledger: migrations, workers, workflow runs, external steps, replays.')
    .option('--database-url <url>', 'PostgreSQL connection string (default: $DATABASE_URL)')
    .option('--json', 'machine-readable JSON output', false)
    .addOption(new Option('--org <organizationId>', 'act within one organization (default: admin scope, all organizations)').conflicts('withoutOrg'))
    .option('--without-org', 'act only on rows without an organization', false)
    .addOption(
      new Option('--connect-timeout <seconds>', `give up connecting to PostgreSQL after this long (exit code 5)`)
        .env('RUNLEDGER_CONNECT_TIMEOUT')
        .argParser(integerOption({ min: 1, max: MAX_CONNECT_TIMEOUT_SECONDS }))
        .default(DEFAULT_CONNECT_TIMEOUT_SECONDS),
    )
    .addHelpText('after', EXIT_CODES_HELP);

  let client: RunledgerPrismaClient | undefined;
  const options = () => program.opts<{ databaseUrl?: string; json: boolean; org?: string; withoutOrg: boolean; connectTimeout: number }>();
  const context: CliContext = {
    get json() {
      return options().json;
    },
    get scope(): Scope {
      const { org, withoutOrg } = options();
      // `--org "$ORG"` with $ORG unset or blank must not fall through to admin scope (every tenant): refused, exit 2.
      if (org !== undefined) {
        if (org.trim() === '')
          throw new UsageError('--org must name an organization; it is empty or blank.', { code: 'cli.blank_organization', field: '--org' });
        try {
          return organizationScope(org);
        } catch (error) {
          // Too long, NUL, a lone surrogate: the library's reason, under the option's name.
          const reason = isRunledgerError(error) ? error.message.replace(/^Invalid organizationId: /, '') : String(error);
          throw new UsageError(`--org ${reason}.`, { code: 'cli.invalid_argument', field: '--org' });
        }
      }
      return withoutOrg ? noOrganizationScope() : adminScope();
    },
    connectionString() {
      const url = options().databaseUrl ?? process.env.DATABASE_URL;
      if (!url) throw new UsageError('No database: pass --database-url or set DATABASE_URL.', { code: 'cli.missing_database_url', field: '--database-url' });
      return url;
    },
    db() {
      client ??= createPrismaClient(context.connectionString(), { max: 4, connectTimeoutMs: options().connectTimeout * 1000 });
      return client;
    },
    connectTimeoutMs() {
      return options().connectTimeout * 1000;
    },
    print(human, data) {
      process.stdout.write(`${context.json ? JSON.stringify(data, null, 2) : human}\n`);
    },
  };

  // Every command, including those that take no scope (migrate, worker): a bad --org is refused before anything runs.
  program.hook('preAction', () => void context.scope);

  program
    .command('migrate')
    .description("apply runledger's migrations (safe to run concurrently; a no-op when up to date)")
    .action(async () => {
      // Through a pool of one, which is where pg takes a connect timeout (migrate's own client would wait for ever).
      const pool = new pg.Pool({ connectionString: context.connectionString(), max: 1, connectionTimeoutMillis: context.connectTimeoutMs() });
      pool.on('error', () => undefined); // a connection lost while idle: the next query reports it
      const result = await migrate({ pool })
        .catch((error: unknown) => {
          // The statements that repair a misplaced history are in the error's details, which human output does not print.
          const fixSql = isRunledgerError(error) ? error.details.fixSql : undefined;
          if (!context.json && Array.isArray(fixSql)) process.stderr.write(`To move the history rows, run:\n${fixSql.map((sql) => `  ${sql};\n`).join('')}`);
          throw error;
        })
        .finally(() => pool.end().catch(() => undefined));
      context.print(
        `${result.applied.length} migration(s) applied, ${result.alreadyApplied.length} already applied.${result.applied.map((name) => `\n  applied ${name}`).join('')}`,
        result,
      );
    });
  registerRunCommands(program, context);
  registerJobCommands(program, context);
  registerWorkerCommand(program, context);
  registerReapCommand(program, context);
  registerDoctorCommand(program, context);
  registerScheduleCommands(program, context);
  registerPurgeCommand(program, context);
  registerStatsCommand(program, context);
  registerDefinitionCommands(program, context);
  registerLimitCommands(program, context);
  registerDashboardCommand(program, context);
  return { program, context, close: async () => void (await client?.$disconnect()) };
}

export async function main(argv: string[]): Promise<number> {
  const { program, context, close } = buildProgram(argv);
  try {
    await program.parseAsync(argv);
    // A command may set a non-zero code for an outcome that is not an error (e.g. expectation mismatch).
    const code = typeof process.exitCode === 'number' ? process.exitCode : 0;
    process.exitCode = undefined;
    return code;
  } catch (error) {
    const json = context.json || argv.includes('--json');
    if (error instanceof CommanderError) {
      // --help and --version end parsing with exit code 0; every other commander error is wrong usage.
      if (error.exitCode === 0) return 0;
      // In human mode commander has already printed the message (and the help hint).
      if (json) writeJsonError(usageErrorFromCommander(error));
      return 2;
    }
    // A driver error that escaped normalisation (a bug) still gets its category's exit code, not a stack trace.
    const failure = !isRunledgerError(error) && isDatabaseError(error) ? normalizeDatabaseError(error, 'runledger cli') : error;
    if (isRunledgerError(failure)) {
      if (json) writeJsonError(failure);
      else process.stderr.write(failure instanceof UsageError ? `${failure.message}\n` : `${failure.code}: ${failure.message}\n`);
      if (process.env.RUNLEDGER_DEBUG) process.stderr.write(`${failure.internalMessage}\n`);
      return EXIT_CODES[failure.category];
    }
    process.stderr.write(`${failure instanceof Error ? (failure.stack ?? failure.message) : String(failure)}\n`);
    return 1;
  } finally {
    // Closing a pool whose connections are already gone must not turn the exit code into a crash.
    await close().catch(() => undefined);
  }
}

/** Errors go to stderr in both modes, so stdout holds only a command's result (and with --json, stays parseable or empty). */
function writeJsonError(error: RunledgerError): void {
  process.stderr.write(`${JSON.stringify(error.toJSON())}\n`);
}

/** Commander's error codes as runledger codes (`commander.missingArgument` -> `cli.missing_argument`). */
const COMMANDER_CODES: Readonly<Record<string, ErrorCode>> = {
  'commander.help': 'cli.missing_command',
  'commander.missingArgument': 'cli.missing_argument',
  'commander.missingMandatoryOptionValue': 'cli.missing_mandatory_option_value',
  'commander.optionMissingArgument': 'cli.option_missing_argument',
  'commander.unknownOption': 'cli.unknown_option',
  'commander.unknownCommand': 'cli.unknown_command',
  'commander.excessArguments': 'cli.excess_arguments',
  'commander.invalidArgument': 'cli.invalid_argument',
  'commander.conflictingOption': 'cli.conflicting_option',
};

/** The usage error for a commander error; the message without commander's "error: " prefix. */
function usageErrorFromCommander(error: CommanderError): UsageError {
  const message = error.code === 'commander.help' ? 'A command is required; see --help.' : error.message.replace(/^error: /, '');
  // Commander quotes what it objects to first ("option '--limit <n>' argument '1.5' is invalid"): that names the field.
  const quoted = /'([^' ]+)/.exec(message)?.[1];
  return new UsageError(message, { code: COMMANDER_CODES[error.code] ?? 'cli.usage', field: quoted ?? 'argv' });
}

// Run when executed as the `runledger` binary (not when imported by tests).
if (process.argv[1] && /[\\/](main\.(js|ts)|runledger)$/.test(process.argv[1])) {
  process.exitCode = await main(process.argv);
}
