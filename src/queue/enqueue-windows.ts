/**
 * Debounce and throttle at enqueue (docs/guide/flow-control.md, "Debounce and throttle"). A batch's window
 * requests are grouped by key (job type, organization, kind, key); each key is one entry of one statement
 * (src/queue/statements/enqueue-windows.ts), whatever the number of requests for it:
 *   - debounce: the key's LAST request in the batch wins (its payload and settings), its windowMs sets the due
 *     time; a window this batch opens takes its maxWaitMs from the key's first request (the opener);
 *   - throttle: the key's FIRST request wins.
 * Every request of a key gets the key's job id. The first one says what happened to the window ('inserted':
 * opened, 'debounced': joined a debounce window, 'throttled': returned a throttle window's job); the later
 * ones say 'debounced' or 'throttled'.
 *
 * A key the statement reports raced is sent again (see the statement's comment), at most MAX_PASSES times. In
 * a transaction that is bounded: a pass holds every window row it locked to the end of the transaction, so no
 * one changes it before the next pass. Autocommitted passes hold nothing, and under contention a key can race
 * pass after pass, so a single key's autocommitted first pass that raced is not repeated there: the caller
 * (enqueue.ts) sends the rest in a transaction of its own (`firstPassOnly`).
 */
import type { Tx } from '../client/types.js';
import { ConflictError, ValidationError } from '../errors/runledger-error.js';
import { jsonParam } from '../model/job-rows.js';
import { asTemplate } from '../db/sql-template.js';
import { captureTraceContext } from '../telemetry/trace-context.js';
import type { EnqueueJobResult, InsertJobRow, InsertJobsOptions } from './insert-jobs.js';
import { enqueueWindowsStatement, type WindowOutcomeRow } from './statements/enqueue-windows.js';

/** A request's window, as parsed: `maxWaitMs` only for a debounce (null: no cap). */
export interface EnqueueWindow {
  kind: 'DEBOUNCE' | 'THROTTLE';
  key: string;
  windowMs: number;
  maxWaitMs: number | null;
}

export interface WindowedRow {
  row: InsertJobRow;
  /** The request's place in its batch. */
  index: number;
  window: EnqueueWindow;
}

/** Passes of the statement for keys that raced; each pass after the first follows a commit of the key by another enqueue. */
const MAX_PASSES = 5;

interface KeyGroup {
  members: WindowedRow[];
  /** The request whose payload and settings the key's job takes. */
  winner: WindowedRow;
}

/** Groups `requests` by window key, in order of first appearance. */
export function groupWindowKeys(requests: readonly WindowedRow[]): KeyGroup[] {
  const groups = new Map<string, WindowedRow[]>();
  for (const request of requests) {
    const id = JSON.stringify([request.row.jobType, request.row.organizationId ?? '', request.window.kind, request.window.key]);
    const members = groups.get(id);
    if (members) members.push(request);
    else groups.set(id, [request]);
  }
  return [...groups.values()].map((members) => ({ members, winner: members[members[0]!.window.kind === 'DEBOUNCE' ? members.length - 1 : 0]! }));
}

/**
 * Debounces or throttles `requests` in the caller's transaction; results by request index. `firstPassOnly`
 * (an autocommitted statement): null when a key raced, after writing nothing for it.
 */
export async function enqueueWindowsTx(
  tx: Tx,
  requests: readonly WindowedRow[],
  options: InsertJobsOptions,
  firstPassOnly = false,
): Promise<Map<number, EnqueueJobResult> | null> {
  const groups = groupWindowKeys(requests);
  const traceContext = jsonParam(await captureTraceContext());
  const outcomes = new Map<number, WindowOutcomeRow>();
  let pending = groups.map((_, ord) => ord);
  for (let pass = 0; pending.length > 0; pass += 1) {
    if (pass === MAX_PASSES) {
      throw new ConflictError('database.transaction_conflict', 'The operation conflicted with a concurrent one; retry it.', {
        internalMessage: `enqueue windows: ${pending.length} key(s) still raced after ${MAX_PASSES} passes`,
      });
    }
    const batch = JSON.stringify(pending.map((ord) => windowEntry(groups[ord]!, ord)));
    const rows = await tx.$queryRaw<WindowOutcomeRow[]>(
      ...asTemplate(
        enqueueWindowsStatement(
          batch,
          options.definitionGate ?? 'off',
          traceContext,
          options.notify ?? true,
          groups.some((group) => group.winner.row.concurrency != null),
          groups.some((group) => group.winner.row.rateLimit != null),
        ),
      ),
    );
    refuse(rows, options.definitionGate ?? 'off');
    const raced: number[] = [];
    for (const row of rows) {
      if (row.ord === null) continue;
      if (row.outcome === 'raced') raced.push(row.ord);
      else outcomes.set(row.ord, row);
    }
    if (raced.length > 0 && firstPassOnly) return null;
    pending = raced;
  }
  const results = new Map<number, EnqueueJobResult>();
  groups.forEach((group, ord) => {
    const outcome = outcomes.get(ord);
    if (outcome?.job_id == null || outcome.status === null || outcome.run_number === null) {
      throw new ConflictError('database.transaction_conflict', 'The operation conflicted with a concurrent one; retry it.', {
        internalMessage: `enqueue windows: no outcome for key ${ord}`,
      });
    }
    const joined = group.members[0]!.window.kind === 'DEBOUNCE' ? ('debounced' as const) : ('throttled' as const);
    group.members.forEach((member, position) => {
      results.set(member.index, {
        jobId: outcome.job_id!,
        status: outcome.status!,
        runNumber: outcome.run_number!,
        disposition: position === 0 && outcome.outcome === 'opened' ? 'inserted' : joined,
      });
    });
  });
  return results;
}

/** The catalog's or the isolation's refusal: nothing was locked or written. */
function refuse(rows: readonly WindowOutcomeRow[], gate: string): void {
  const isolation = rows.find((row) => row.isolation !== null)?.isolation;
  if (isolation) {
    throw new ValidationError(
      'job.enqueue_window_unsupported_isolation',
      'transaction.isolationLevel',
      'Enqueue with debounce or throttle requires a READ COMMITTED transaction.',
      {
        internalMessage: `enqueue windows: caller transaction isolation is ${isolation}`,
        details: { isolationLevel: isolation },
      },
    );
  }
  const refused = rows.flatMap((row) => (row.refused === null ? [] : [row.refused]));
  if (refused.length > 0) {
    throw new ConflictError('job.definition_not_found_or_disabled', 'The job type has no enabled definition.', {
      internalMessage: `enqueue windows: refused by the definitions catalog (${gate}): ${refused.join(', ')}`,
      details: { jobTypes: refused.sort() },
    });
  }
}

/** One key of the statement's batch: the winner's job fields (null ones left out, as insert-jobs.ts's batchEntry does) and the window. */
function windowEntry(group: KeyGroup, ord: number): Record<string, unknown> {
  const { row: r, window } = group.winner;
  const entry: Record<string, unknown> = {
    ord,
    id: r.id,
    job_type: r.jobType,
    payload: { v: r.payload },
    priority: r.priority,
    max_attempts: r.maxAttempts,
    timeout_seconds: r.timeoutSeconds,
    kind: window.kind,
    window_key: window.key,
    window_ms: window.windowMs,
  };
  const optional: [string, unknown][] = [
    ['organization_id', r.organizationId],
    ['next_run_at', r.nextRunAt],
    ['delay_ms', r.delayMs],
    ['resource_key', r.resourceKey],
    ['backoff_base_ms', r.backoff?.baseDelayMs],
    ['backoff_max_ms', r.backoff?.maxDelayMs],
    ['stage', r.stage],
    ['concurrency_key', r.concurrency?.key],
    ['concurrency_limit', r.concurrency?.limit],
    ['rate_key', r.rateLimit?.key],
    ['rate_limit', r.rateLimit?.limit],
    ['rate_period_ms', r.rateLimit?.periodMs],
    ['rate_burst', r.rateLimit?.burst],
    ['fair_key', r.fairness?.key],
    ['fair_weight', r.fairness?.weight],
    // The opener's cap: a window this batch opens is opened by the key's first request.
    ['max_wait_ms', group.members[0]!.window.maxWaitMs],
  ];
  for (const [key, value] of optional) if (value !== null && value !== undefined) entry[key] = value;
  return entry;
}
