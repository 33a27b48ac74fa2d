/**
 * `runledger definitions sync|list|enable|disable`: the job definitions
 * catalog (src/queue/catalog.ts). `sync --handlers <module>` writes the
 * definitions a module exports (the same module `runledger worker` runs), so a
 * deploy can register new types before any worker starts. The catalog is not
 * per organization: --org and --without-org are refused.
 */
import type { Command } from 'commander';
import { listJobDefinitions, setJobDefinitionEnabled, syncJobDefinitions, type JobDefinitionRecord } from '../queue/catalog.js';
import { MAX_LIST_LIMIT } from '../queue/inputs.js';
import { UsageError, type CliContext } from './context.js';
import { table } from './format.js';
import { integerOption, textOption } from './options.js';
import { loadHandlers } from './worker.js';

function refuseScope(context: CliContext): void {
  const scope = context.scope;
  if (scope.kind !== 'admin') {
    throw new UsageError('job definitions are not per organization; --org and --without-org do not apply.', {
      code: 'cli.scope_not_supported',
      field: scope.kind === 'no_organization' ? '--without-org' : '--org',
    });
  }
}

function formatDefinitions(definitions: readonly JobDefinitionRecord[]): string {
  if (definitions.length === 0) return 'No job definitions.';
  return table([
    ['JOB TYPE', 'ENABLED', 'PRIORITY', 'MAX ATTEMPTS', 'TIMEOUT S', 'BACKOFF MS', 'SCHEMA'],
    ...definitions.map((d) => [
      d.jobType,
      d.enabled ? 'yes' : 'no',
      String(d.defaultPriority),
      String(d.defaultMaxAttempts),
      String(d.defaultTimeoutSeconds),
      `${d.backoff.baseDelayMs}..${d.backoff.maxDelayMs}`,
      d.payloadSchemaHash?.slice(0, 12) ?? '-',
    ]),
  ]);
}

export function registerDefinitionCommands(program: Command, context: CliContext): void {
  const definitions = program.command('definitions').description('sync, list, enable or disable job definitions (the catalog)');
  definitions
    .command('sync')
    .description('write the definitions a module exports to the catalog (new types enabled; enabled/disabled kept)')
    .requiredOption('--handlers <module>', 'module exporting `handlers`: an array of defineJob(...) definitions (as for `runledger worker`)', textOption)
    .action(async (options: { handlers: string }) => {
      refuseScope(context);
      const handlers = await loadHandlers(options.handlers);
      const result = await syncJobDefinitions(context.db(), handlers);
      context.print(`${result.inserted.length} inserted, ${result.updated.length} updated, ${result.unchanged.length} unchanged.`, result);
    });
  definitions
    .command('list')
    .description('list the catalog in job-type order')
    .option('--limit <n>', `definitions per page (1-${MAX_LIST_LIMIT}, default 50)`, integerOption({ min: 1, max: MAX_LIST_LIMIT }))
    .option('--cursor <jobType>', "the previous page's nextCursor (its last job type)", textOption)
    .action(async (options: { limit?: number; cursor?: string }) => {
      refuseScope(context);
      const page = await listJobDefinitions(context.db(), {
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
      const more = page.nextCursor ? `\nMore: --cursor ${page.nextCursor}` : '';
      context.print(`${formatDefinitions(page.items)}${more}`, page);
    });
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    definitions
      .command(`${name} <jobType>`)
      .description(
        enabled ? 'accept enqueues of the type again, and promote its intents' : 'refuse new enqueues of the type and hold its intents (queued jobs still run)',
      )
      .action(async (jobType: string) => {
        refuseScope(context);
        const record = await setJobDefinitionEnabled(context.db(), { jobType, enabled });
        context.print(`Job type ${jobType} ${enabled ? 'enabled' : 'disabled'}.`, record);
      });
  }
}
