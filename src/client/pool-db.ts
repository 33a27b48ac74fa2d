/**
 * A runledger client over a `pg` Pool, without Prisma's query layer: the
 * worker's own statements (claims, completions, heartbeats, failures, the
 * maintenance loops) go straight to pg. Prisma's raw-query path re-encodes
 * every parameter and result row on the way through its query engine; on a
 * drained job that cost about a third of the worker's Node CPU
 * (bench/README.md, "Where a drained job's time goes").
 *
 * It speaks the part of the Prisma client runledger uses (`$queryRaw`,
 * `$executeRaw` as tagged templates with nested `sqltag` fragments,
 * `$transaction(fn, { isolationLevel, maxWait, timeout })`), with Prisma's
 * result types for every column type runledger reads, through its own
 * parsers whatever the host set globally (pg-values.ts), on sessions pinned
 * to the DateStyle and TimeZone runledger's values depend on (PIN_SESSION). Statements are named (one
 * server-side plan per connection, like `preparedStatementName`) unless the
 * pool sits behind a transaction-mode pooler without prepared statements.
 *
 * A transaction client lacks `$connect`, so `isTransactionClient` tells the
 * two apart as it does Prisma's. After its transaction ended, or once its
 * `timeout` has passed, a transaction client refuses statements with
 * Prisma's "Transaction already closed" (P2028), which
 * `normalizeDatabaseError` turns into `database.transaction_closed`.
 */
import { createHash } from 'node:crypto';
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import type pg from 'pg';
import { ValidationError } from '../errors/runledger-error.js';
import { RUNLEDGER_TYPES } from './pg-values.js';
import { timerOption } from './transaction.js';
import type { PrismaClientLike, PrismaTransactionLike, TransactionOptions } from './types.js';

/** Prisma's defaults for an interactive transaction. */
const DEFAULT_MAX_WAIT_MS = 2_000;
const DEFAULT_TIMEOUT_MS = 5_000;

const ISOLATION_SQL: Record<NonNullable<TransactionOptions['isolationLevel']>, string> = {
  ReadUncommitted: 'BEGIN ISOLATION LEVEL READ UNCOMMITTED',
  ReadCommitted: 'BEGIN ISOLATION LEVEL READ COMMITTED',
  RepeatableRead: 'BEGIN ISOLATION LEVEL REPEATABLE READ',
  Serializable: 'BEGIN ISOLATION LEVEL SERIALIZABLE',
};

/** A Date parameter as an ISO instant: unambiguous whatever the session's TimeZone. */
function toParameter(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : value;
}

/** Prisma's code for a transaction that has ended (or timed out), so `normalizeDatabaseError` treats it alike. */
function transactionClosedError(why: string): Error {
  return Object.assign(new Error(`Transaction already closed: ${why}`), { code: 'P2028' });
}

export interface PoolDbSettings {
  /** Name each distinct statement so PostgreSQL reuses its plan (default true); false behind PgBouncer < 1.21. */
  preparedStatements?: boolean;
  /** End the pool on `$disconnect()` (true when runledger created it). */
  ownsPool?: boolean;
}

/** One statement shape: its template pieces, its text and its prepared-statement name. */
interface Shape {
  pieces: readonly string[];
  text: string;
  name: string;
}

/**
 * Statement naming shared by the root client and its transactions. A shape is found by its template pieces,
 * not by its text: the pieces of a template (and of the fragments flattened into it) are the same strings
 * call after call, so matching them is a pointer comparison each, where building the text and hashing it
 * whole for the lookup was two passes over ~4.5 KB on every workflow start (bench/README.md, "Enqueue's
 * client CPU"). The text is built and hashed once per shape.
 */
class Statements {
  private readonly shapes = new Map<string, Shape[]>();

  constructor(private readonly named: boolean) {}

  config(query: Sql): pg.QueryConfig {
    const shape = this.shape(query.strings);
    const values = query.values.map(toParameter);
    if (!this.named) return { text: shape.text, values, types: RUNLEDGER_TYPES };
    return { name: shape.name, text: shape.text, values, types: RUNLEDGER_TYPES };
  }

  private shape(pieces: readonly string[]): Shape {
    const first = pieces[0] ?? '';
    let candidates = this.shapes.get(first);
    if (candidates === undefined) {
      candidates = [];
      this.shapes.set(first, candidates);
    }
    for (const candidate of candidates) if (samePieces(candidate.pieces, pieces)) return candidate;
    let text = first;
    for (let i = 1; i < pieces.length; i++) text += `$${i}${pieces[i]}`;
    const shape = { pieces: [...pieces], text, name: `rlp_${createHash('sha1').update(text).digest('hex').slice(0, 24)}` };
    candidates.push(shape);
    return shape;
  }
}

/** The same pieces: the same text (pieces and placeholders alternate, so equal pieces make equal text). */
function samePieces(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The session settings runledger's values depend on: DateStyle ISO (what pg-values.ts parses) and TimeZone
 * UTC (how its SQL renders timestamps into JSON and does calendar arithmetic). A session SET, once per
 * connection and again after the server reports a change, not SET LOCAL: single statements autocommit
 * outside any transaction, and a transaction-mode PgBouncer keeps these two per client and re-applies them
 * on whichever backend it links (docs/operate/performance.md, "poolDb").
 */
const PIN_SESSION = "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'";

/** Per connection: whether its session is known to be as PIN_SESSION leaves it (absent: never seen). */
const pinnedSession = new WeakMap<pg.ClientBase, { dateStyle: boolean; timeZone: boolean }>();

function needsPin(client: pg.ClientBase): boolean {
  const known = pinnedSession.get(client);
  if (known !== undefined) return !(known.dateStyle && known.timeZone);
  const state = { dateStyle: false, timeZone: false };
  pinnedSession.set(client, state);
  // The server reports every change of either (a host's SET, RESET, DISCARD ALL) as a ParameterStatus.
  (client as { connection?: NodeJS.EventEmitter }).connection?.on('parameterStatus', (message: { parameterName: string; parameterValue: string }) => {
    if (message.parameterName === 'DateStyle') state.dateStyle = message.parameterValue.startsWith('ISO');
    if (message.parameterName === 'TimeZone') state.timeZone = message.parameterValue === 'UTC';
  });
  return true;
}

/** After PIN_SESSION ran (also where no ParameterStatus arrives: pg-native, a pooler that absorbs them). */
function markPinned(client: pg.ClientBase): void {
  pinnedSession.set(client, Object.assign(pinnedSession.get(client) ?? {}, { dateStyle: true, timeZone: true }));
}

/**
 * pg-pool's `onConnect` hook for a pool runledger creates itself (connect.ts): the pin runs before the pool
 * hands the connection out, so the Prisma client runledger builds on it (CLI) reads ISO timestamps in UTC too;
 * a failed pin fails that connect. (A 'connect' listener could only queue the SET beside the first statement.)
 */
export async function pinSessionOnConnect(client: pg.ClientBase): Promise<void> {
  needsPin(client);
  await client.query(PIN_SESSION);
  markPinned(client);
}

/** Sends `sql` on `client`, the session pin first when it needs one (one simple-protocol round trip for both). */
async function pinnedSimpleQuery(client: pg.PoolClient, sql: string): Promise<pg.QueryResult> {
  if (!needsPin(client)) return client.query(sql);
  const results = (await client.query(`${PIN_SESSION}; ${sql}`)) as unknown as pg.QueryResult[];
  markPinned(client);
  return results[results.length - 1]!;
}

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

abstract class RawQueries {
  constructor(protected readonly statements: Statements) {}

  protected abstract run(config: pg.QueryConfig): Promise<pg.QueryResult>;

  async $queryRaw<T = unknown>(strings: TemplateStringsArray, ...values: unknown[]): Promise<T> {
    return (await this.run(this.statements.config(sqltag(strings, ...values)))).rows as T;
  }

  async $executeRaw(strings: TemplateStringsArray, ...values: unknown[]): Promise<number> {
    return (await this.run(this.statements.config(sqltag(strings, ...values)))).rowCount ?? 0;
  }
}

/** One interactive transaction's client: joins it, never commits or rolls back. */
class PoolTransaction extends RawQueries implements PrismaTransactionLike {
  closedBecause: string | undefined;

  constructor(
    statements: Statements,
    private readonly client: Queryable,
  ) {
    super(statements);
  }

  protected run(config: pg.QueryConfig): Promise<pg.QueryResult> {
    if (this.closedBecause !== undefined) return Promise.reject(transactionClosedError(this.closedBecause));
    return this.client.query(config);
  }
}

export class PoolDb extends RawQueries implements PrismaClientLike {
  constructor(
    readonly pool: pg.Pool,
    private readonly options: PoolDbSettings = {},
  ) {
    super(new Statements(options.preparedStatements ?? true));
    // As Prisma's adapter does: an idle pooled connection the server terminates makes the pool emit 'error',
    // which with no listener would crash the process. pg-pool drops that connection; the next statement
    // connects anew, and a statement that meets a dead connection fails as database.unavailable.
    pool.on('error', ignoreConnectionError);
    // And every connection it makes from now on keeps a listener for life, as createPool's do (connect.ts): a
    // backend terminated as it finishes connecting sends its FATAL in the same read as the end of the
    // handshake, after pg-pool has dropped its idle listener and before the code awaiting `pool.connect()`
    // resumes to add its own. Without it the 10-minute chaos run lost 3 of 37 pool-backed worker processes
    // to an unhandled 'error' (57P01) during termination rounds. A pool from createPool has it already.
    this.addedConnectListener = !pool.listeners('connect').includes(listenForLife);
    if (this.addedConnectListener) pool.on('connect', listenForLife);
  }

  private readonly addedConnectListener: boolean;

  /** One autocommit statement on a pooled connection, pinned first if it needs it (see PIN_SESSION). */
  protected async run(config: pg.QueryConfig): Promise<pg.QueryResult> {
    const client = await this.pool.connect();
    client.on('error', ignoreConnectionError);
    let failed: Error | undefined;
    try {
      if (needsPin(client)) {
        await client.query(PIN_SESSION);
        markPinned(client);
      }
      return await client.query(config);
    } catch (error) {
      failed = error as Error;
      throw error;
    } finally {
      client.removeListener('error', ignoreConnectionError);
      // As pool.query() does: a connection that met an error is not reused.
      client.release(failed);
    }
  }

  async $connect(): Promise<void> {
    (await this.pool.connect()).release();
  }

  /** True once `$disconnect()` has run: the pool's listeners are gone (poolDb() then makes a new client). */
  disconnected = false;

  async $disconnect(): Promise<void> {
    this.disconnected = true;
    this.pool.removeListener('error', ignoreConnectionError);
    if (this.addedConnectListener) this.pool.removeListener('connect', listenForLife);
    if (this.options.ownsPool) await this.pool.end();
  }

  /**
   * Prisma's interactive transaction: a connection within `maxWait` ms, BEGIN (at `isolationLevel`), `fn`,
   * COMMIT; ROLLBACK when `fn` throws. Past `timeout` ms the transaction client refuses statements and the
   * transaction is rolled back when `fn` returns.
   */
  async $transaction<R>(fn: (tx: PrismaTransactionLike) => Promise<R>, options: TransactionOptions = {}): Promise<R> {
    const { begin, maxWaitMs, timeoutMs } = transactionSettings(options);
    const client = await this.connectWithin(maxWaitMs);
    // Checked out, the connection is outside pg-pool's idle listener: a termination between two statements
    // emits 'error' on it (the next statement then fails and the transaction rolls back).
    client.on('error', ignoreConnectionError);
    const tx = new PoolTransaction(this.statements, client);
    const timer = setTimeout(() => {
      tx.closedBecause ??= `the transaction ran past its timeout of ${timeoutMs} ms`;
    }, timeoutMs);
    let broken: Error | undefined;
    try {
      await pinnedSimpleQuery(client, begin);
      const result = await fn(tx);
      if (tx.closedBecause !== undefined) throw transactionClosedError(tx.closedBecause);
      tx.closedBecause = 'the transaction has committed';
      const commit = await client.query('COMMIT');
      // COMMIT of a transaction a failed statement aborted answers ROLLBACK instead of raising: nothing was written.
      if (commit.command === 'ROLLBACK') throw transactionClosedError('a statement failed inside it, so COMMIT rolled it back');
      return result;
    } catch (error) {
      tx.closedBecause ??= 'the transaction has rolled back';
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    } finally {
      clearTimeout(timer);
      client.removeListener('error', ignoreConnectionError);
      // A connection whose ROLLBACK failed is in an unknown state: the pool discards it.
      client.release(broken);
    }
  }

  /** A pooled connection within `ms`, or pg's own wait-timeout error (a connection fault: `database.unavailable`). */
  private async connectWithin(ms: number): Promise<pg.PoolClient> {
    const connecting = this.pool.connect();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout exceeded when trying to connect')), ms);
    });
    try {
      return await Promise.race([connecting, timedOut]);
    } catch (error) {
      // The connection may still come: give it straight back.
      connecting.then((late) => late.release()).catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * BEGIN and the two waits of `$transaction`'s options, or a coded error naming the bad one (a TypeError or a
 * timer that fires at once otherwise), before any connection is taken.
 */
function transactionSettings(options: TransactionOptions): { begin: string; maxWaitMs: number; timeoutMs: number } {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError('client.invalid_options', 'options', 'Invalid options: must be an object.');
  }
  const { isolationLevel, maxWait, timeout } = options;
  if (isolationLevel !== undefined && !Object.hasOwn(ISOLATION_SQL, isolationLevel)) {
    throw new ValidationError(
      'client.invalid_options',
      'options.isolationLevel',
      `Invalid options.isolationLevel: must be one of ${Object.keys(ISOLATION_SQL).join(', ')}.`,
    );
  }
  return {
    begin: isolationLevel === undefined ? 'BEGIN' : ISOLATION_SQL[isolationLevel],
    maxWaitMs: timerOption(maxWait, 'options.maxWait', DEFAULT_MAX_WAIT_MS),
    timeoutMs: timerOption(timeout, 'options.timeout', DEFAULT_TIMEOUT_MS),
  };
}

/** The 'error' listener of a connection or pool: the failure is reported through the statement that meets it. */
export function ignoreConnectionError(): void {
  // Reported through the statement that meets the broken connection.
}

/** A pool's 'connect' listener: the new connection keeps `ignoreConnectionError` for as long as it lives. */
export function listenForLife(client: pg.PoolClient): void {
  client.on('error', ignoreConnectionError);
}
