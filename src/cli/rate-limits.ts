/**
 * `runledger limits rate list|set`: rate keys' limits (src/queue/rate-limits.ts), in the style of `limits
 * list|set`. `list` shows the keys in the scope with their setting, tokens now and waiting jobs (a tenant's --org
 * counts its own jobs); `set` pins a key's limit (`--limit N --period-ms N [--burst N]`) or gives it back to
 * enqueues (`--clear`). A limit binds every organization's jobs of the key, so `set` refuses --org and
 * --without-org, and takes exactly one of --limit and --clear: neither is refused, never read as either.
 */
import type { Command } from 'commander';
import { MAX_LIST_LIMIT } from '../queue/inputs.js';
import { listRateLimits, setRateLimit, type RateLimit } from '../queue/rate-limits.js';
import { MAX_RATE_PERIOD_MS, MAX_RATE_STARTS } from '../validation/primitives.js';
import { UsageError, type CliContext } from './context.js';
import { table } from './format.js';
import { integerOption, textOption } from './options.js';

/** Whole tokens: a start takes one (the bucket refills continuously). */
const whole = (tokens: number) => String(Math.floor(tokens));

function formatRateLimits(items: readonly RateLimit[]): string {
  if (items.length === 0) return 'No rate keys.';
  return table([
    ['KEY', 'LIMIT', 'PERIOD MS', 'BURST', 'TOKENS', 'WAITING', 'SET BY', 'UPDATED'],
    ...items.map((k) => [k.key, String(k.limit), String(k.periodMs), String(k.burst), whole(k.tokens), String(k.waiting), k.setBy, k.updatedAt.toISOString()]),
  ]);
}

interface SetOptions {
  key: string;
  limit?: number;
  periodMs?: number;
  burst?: number;
  clear: boolean;
}

/** The setting the options ask for (null: give back), or a usage error naming the option that is missing or extra. */
function settingOf(options: SetOptions): { limit: number; periodMs: number; burst?: number } | null {
  if (options.clear) {
    const extra = options.limit !== undefined ? '--limit' : options.periodMs !== undefined ? '--period-ms' : options.burst !== undefined ? '--burst' : null;
    if (extra !== null) throw new UsageError(`Choose one of ${extra} and --clear.`, { code: 'cli.conflicting_options', field: '--clear' });
    return null;
  }
  if (options.limit === undefined) {
    throw new UsageError('Give --limit <n> --period-ms <ms>, or --clear to give the limit back to enqueues.', {
      code: 'cli.missing_argument',
      field: '--limit',
    });
  }
  if (options.periodMs === undefined)
    throw new UsageError('--limit needs --period-ms <ms>: starts per how long.', { code: 'cli.missing_argument', field: '--period-ms' });
  return { limit: options.limit, periodMs: options.periodMs, ...(options.burst === undefined ? {} : { burst: options.burst }) };
}

export function registerRateLimitCommands(limits: Command, context: CliContext): void {
  const rate = limits.command('rate').description("list or change rate keys' limits (starts per period, burst)");
  rate
    .command('list')
    .description('list rate keys in key order, with their limits, tokens now and waiting jobs (in the scope)')
    .option('--limit <n>', `keys per page (1-${MAX_LIST_LIMIT}, default 100)`, integerOption({ min: 1, max: MAX_LIST_LIMIT }))
    .option('--after <key>', "the previous page's nextAfter (its last key)", textOption)
    .action(async (options: { limit?: number; after?: string }) => {
      const page = await listRateLimits(context.db(), {
        scope: context.scope,
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.after === undefined ? {} : { after: options.after }),
      });
      const more = page.nextAfter === null ? '' : `\nMore: --after ${JSON.stringify(page.nextAfter)}`;
      context.print(`${formatRateLimits(page.items)}${more}`, page);
    });
  rate
    .command('set')
    .description("pin a key's rate limit (--limit N --period-ms N [--burst N]; enqueues stop changing it), or give it back (--clear)")
    .requiredOption('--key <key>', 'the rate key', textOption)
    .option('--limit <n>', `starts per period, on average (1-${MAX_RATE_STARTS})`, integerOption({ min: 1, max: MAX_RATE_STARTS }))
    .option('--period-ms <ms>', `the period in milliseconds (1-${MAX_RATE_PERIOD_MS}, 7 days)`, integerOption({ min: 1, max: MAX_RATE_PERIOD_MS }))
    .option('--burst <n>', `most starts at once (1-${MAX_RATE_STARTS}, default --limit)`, integerOption({ min: 1, max: MAX_RATE_STARTS }))
    .option('--clear', 'give the limit back to enqueues (it stays until an enqueue naming the key sets one)', false)
    .action(async (options: SetOptions) => {
      if (context.scope.kind !== 'admin') {
        throw new UsageError("a key's rate limit binds every organization's jobs of the key; --org and --without-org do not apply.", {
          code: 'cli.scope_not_supported',
          field: context.scope.kind === 'no_organization' ? '--without-org' : '--org',
        });
      }
      const setting = settingOf(options);
      const limit = await setRateLimit(context.db(), { key: options.key, limit: setting });
      const values = `${limit.limit} per ${limit.periodMs} ms, burst ${limit.burst}`;
      const state = `${whole(limit.tokens)} token(s), ${limit.waiting} waiting`;
      const human =
        setting === null
          ? `Rate key ${options.key}: limit given back to enqueues (now ${values}; ${state}).`
          : `Rate key ${options.key}: ${values}, pinned (${state}).`;
      context.print(human, limit);
    });
}
