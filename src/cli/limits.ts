/**
 * `runledger limits list|set`: concurrency keys' limits (src/queue/concurrency.ts). `list` shows the keys in the
 * scope with their limits, live leases and waiting jobs (a tenant's --org counts its own jobs); `set` pins a
 * key's limit (`--limit N`) or gives it back to enqueues (`--clear`). A limit binds every organization's jobs of
 * the key, so `set` refuses --org and --without-org, and takes exactly one of --limit and --clear: neither is
 * refused, never read as either. `limits rate list|set` does the same for rate keys (rate-limits.ts).
 */
import type { Command } from 'commander';
import { listConcurrencyLimits, setConcurrencyLimit, type ConcurrencyLimit } from '../queue/concurrency.js';
import { MAX_LIST_LIMIT } from '../queue/inputs.js';
import { MAX_CONCURRENCY_LIMIT } from '../validation/primitives.js';
import { UsageError, type CliContext } from './context.js';
import { table } from './format.js';
import { integerOption, textOption } from './options.js';
import { registerRateLimitCommands } from './rate-limits.js';

function formatLimits(items: readonly ConcurrencyLimit[]): string {
  if (items.length === 0) return 'No concurrency keys.';
  return table([
    ['KEY', 'LIMIT', 'LEASED', 'WAITING', 'SET BY', 'UPDATED'],
    ...items.map((k) => [k.key, String(k.limit), String(k.leased), String(k.waiting), k.setBy, k.updatedAt.toISOString()]),
  ]);
}

export function registerLimitCommands(program: Command, context: CliContext): void {
  const limits = program.command('limits').description("list or change concurrency keys' limits (and rate keys': limits rate)");
  limits
    .command('list')
    .description('list concurrency keys in key order, with their limits, live leases and waiting jobs (in the scope)')
    .option('--limit <n>', `keys per page (1-${MAX_LIST_LIMIT}, default 100)`, integerOption({ min: 1, max: MAX_LIST_LIMIT }))
    .option('--after <key>', "the previous page's nextAfter (its last key)", textOption)
    .action(async (options: { limit?: number; after?: string }) => {
      const page = await listConcurrencyLimits(context.db(), {
        scope: context.scope,
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.after === undefined ? {} : { after: options.after }),
      });
      const more = page.nextAfter === null ? '' : `\nMore: --after ${JSON.stringify(page.nextAfter)}`;
      context.print(`${formatLimits(page.items)}${more}`, page);
    });
  limits
    .command('set')
    .description("pin a key's limit (--limit N; enqueues stop changing it), or give it back to enqueues (--clear)")
    .requiredOption('--key <key>', 'the concurrency key', textOption)
    .option(
      '--limit <n>',
      `at most this many of the key's jobs leased at once (1-${MAX_CONCURRENCY_LIMIT})`,
      integerOption({ min: 1, max: MAX_CONCURRENCY_LIMIT }),
    )
    .option('--clear', 'give the limit back to enqueues (it stays until an enqueue naming the key sets one)', false)
    .action(async (options: { key: string; limit?: number; clear: boolean }) => {
      if (context.scope.kind !== 'admin') {
        throw new UsageError("a key's limit binds every organization's jobs of the key; --org and --without-org do not apply.", {
          code: 'cli.scope_not_supported',
          field: context.scope.kind === 'no_organization' ? '--without-org' : '--org',
        });
      }
      if (options.limit !== undefined && options.clear) {
        throw new UsageError('Choose one of --limit and --clear.', { code: 'cli.conflicting_options', field: '--clear' });
      }
      if (options.limit === undefined && !options.clear) {
        throw new UsageError('Give --limit <n>, or --clear to give the limit back to enqueues.', { code: 'cli.missing_argument', field: '--limit' });
      }
      const limit = await setConcurrencyLimit(context.db(), { key: options.key, limit: options.clear ? null : options.limit! });
      const human = options.clear
        ? `Concurrency key ${options.key}: limit given back to enqueues (now ${limit.limit}; ${limit.leased} leased, ${limit.waiting} waiting).`
        : `Concurrency key ${options.key}: limit ${limit.limit}, pinned (${limit.leased} leased, ${limit.waiting} waiting).`;
      context.print(human, limit);
    });
  registerRateLimitCommands(limits, context);
}
