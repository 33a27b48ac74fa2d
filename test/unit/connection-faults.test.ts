/**
 * The shapes connection faults take on their way out of pg, pg-pool,
 * @prisma/adapter-pg and Prisma 7 (each copied from a real failure:
 * a closed port, pg_terminate_backend, a cut network), and the worker's
 * retry of lease-fenced writes until the lease would expire.
 */
import { describe, expect, it } from 'vitest';
import { ConflictError, isConnectionFault, normalizeDatabaseError, ValidationError } from '../../src/errors/index.js';
import { LEASE_RETRY_MAX_MS, leaseDeadline, leaseGranted, retryLeaseWrite } from '../../src/worker/retry.js';
import { UnavailableError } from '../../src/errors/runledger-error.js';

/** What Prisma 7 throws for a raw query whose driver adapter failed. */
const adapterError = (code: string, cause: Record<string, unknown>) =>
  Object.assign(new Error('Invalid `prisma.$queryRaw()` invocation: Raw query failed. Code: `N/A`.'), {
    name: 'PrismaClientKnownRequestError',
    code,
    clientVersion: '7.10.1',
    meta: { driverAdapterError: Object.assign(new Error(String(cause.kind)), { name: 'DriverAdapterError', cause }) },
  });

/** A DatabaseError as pg raises it (pg-protocol's parser: `severity` is the server's possibly translated S field). */
const pgError = (code: string, severity: string, message: string, routine: string) =>
  Object.assign(new Error(message), { name: 'error', length: message.length + 50, severity, code, routine });

const notAccepting = { originalCode: '55000', originalMessage: 'database "app" is not currently accepting connections' };
const tooMany = {
  originalCode: '53300',
  originalMessage: 'too many connections for database "app"',
  kind: 'TooManyConnections',
  cause: 'too many connections for database "app"',
};

const faults: [string, unknown][] = [
  ['refused, raw query (P2010 wrapping DatabaseNotReachable)', adapterError('P2010', { kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 1 })],
  ['refused, $transaction start (P1001)', adapterError('P1001', { kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 1 })],
  ['reset (ConnectionClosed, P1017)', adapterError('P1017', { kind: 'ConnectionClosed' })],
  ['socket timeout (SocketTimeout)', adapterError('P2010', { kind: 'SocketTimeout' })],
  [
    'terminated by the server (57P01 through the adapter)',
    adapterError('P2010', { kind: 'postgres', code: '57P01', originalCode: '57P01', originalMessage: 'terminating connection due to administrator command' }),
  ],
  ['connection lost mid-query (pg, rethrown raw by the adapter)', Object.assign(new Error('Connection terminated unexpectedly'), { clientVersion: '7.10.1' })],
  ['connection timeout (pg-pool)', new Error('Connection terminated due to connection timeout', { cause: new Error('Connection terminated unexpectedly') })],
  ['pool wait timeout (pg-pool)', new Error('timeout exceeded when trying to connect')],
  ['a client that already failed', new Error('Client has encountered a connection error and is not queryable')],
  ['ECONNREFUSED from net', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' })],
  ['ENOTFOUND from dns', Object.assign(new Error('getaddrinfo ENOTFOUND db'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' })],
  ['EAI_AGAIN from dns', Object.assign(new Error('getaddrinfo EAI_AGAIN db'), { code: 'EAI_AGAIN', syscall: 'getaddrinfo' })],
  ['EPIPE', Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write' })],
  ['class 08 from pg', Object.assign(new Error('connection failure'), { code: '08006', severity: 'FATAL' })],
  ['57P03 cannot connect now', Object.assign(new Error('the database system is starting up'), { code: '57P03', severity: 'FATAL' })],
  [
    'Prisma interactive transaction could not start in time (P2028)',
    Object.assign(new Error('Transaction API error: Unable to start a transaction in the given time.'), { code: 'P2028' }),
  ],
  // The shapes below were recorded against PostgreSQL 15 (ALLOW_CONNECTIONS false, CONNECTION LIMIT 0 for a
  // non-superuser role, pg_ctl stop -m smart with a session open) through createPrismaClient and plain pg.
  [
    'not accepting connections, raw query (P2010 wrapping 55000 FATAL)',
    adapterError('P2010', { ...notAccepting, kind: 'postgres', code: '55000', severity: 'FATAL', message: notAccepting.originalMessage }),
  ],
  [
    'not accepting connections, $transaction start (P2039 wrapping 55000 FATAL)',
    adapterError('P2039', { ...notAccepting, kind: 'postgres', code: '55000', severity: 'FATAL', message: notAccepting.originalMessage }),
  ],
  ['not accepting connections, plain pg connect (55000 FATAL)', pgError('55000', 'FATAL', notAccepting.originalMessage, 'CheckMyDatabase')],
  [
    'not accepting connections, message only (a severity word the driver did not keep)',
    pgError('55000', 'ERROR', notAccepting.originalMessage, 'CheckMyDatabase'),
  ],
  [
    'shutting down, raw query (P2010 wrapping 57P03)',
    adapterError('P2010', {
      originalCode: '57P03',
      originalMessage: 'the database system is shutting down',
      kind: 'postgres',
      code: '57P03',
      severity: 'FATAL',
    }),
  ],
  [
    'starting up, $transaction start (P2039 wrapping 57P03)',
    adapterError('P2039', { originalCode: '57P03', originalMessage: 'the database system is starting up', kind: 'postgres', code: '57P03', severity: 'FATAL' }),
  ],
  ['shutting down, plain pg connect (57P03)', pgError('57P03', 'FATAL', 'the database system is shutting down', 'ProcessStartupPacket')],
  ['too many connections, raw query (P2010 wrapping TooManyConnections 53300)', adapterError('P2010', tooMany)],
  ['too many connections, $transaction start (P2037)', adapterError('P2037', tooMany)],
  ['too many connections, plain pg (53300)', pgError('53300', 'FATAL', 'too many connections for role "app"', 'InitializeSessionUserId')],
  ['crash shutdown (57P02)', pgError('57P02', 'FATAL', 'terminating connection because of crash of another server process', 'quickdie')],
  ['database dropped under the session (57P04)', pgError('57P04', 'FATAL', 'terminating connection because database was dropped', 'ProcessInterrupts')],
  ['idle session timeout (57P05)', pgError('57P05', 'FATAL', 'terminating connection due to idle-session timeout', 'ProcessInterrupts')],
  ['protocol violation (08P01)', pgError('08P01', 'FATAL', 'invalid frontend message type 0', 'SocketBackend')],
];

describe('connection fault classification', () => {
  it.each(faults)('%s is database.unavailable, with a message that leaks nothing', (_label, error) => {
    expect(isConnectionFault(error)).toBe(true);
    const normalized = normalizeDatabaseError(error, 'complete jobs');
    expect(normalized).toBeInstanceOf(UnavailableError);
    expect(normalized).toMatchObject({ code: 'database.unavailable', category: 'unavailable' });
    expect(normalized.message).toBe('The database is unavailable; retry later.');
    expect(normalized.internalMessage).toContain('complete jobs');
  });

  it('leaves 55000 alone when it is not a refused session (an ERROR inside one: currval before nextval)', () => {
    const currval = pgError('55000', 'ERROR', 'currval of sequence "s" is not yet defined in this session', 'currval_oid');
    expect(isConnectionFault(currval)).toBe(false);
    expect(normalizeDatabaseError(currval, 'x')).toMatchObject({ code: 'database.error', category: 'internal' });
    const throughPrisma = adapterError('P2010', {
      originalCode: '55000',
      originalMessage: currval.message,
      kind: 'postgres',
      code: '55000',
      severity: 'ERROR',
      message: currval.message,
    });
    expect(normalizeDatabaseError(throughPrisma, 'x').code).toBe('database.error');
  });

  it.each([
    [
      'a raw query (P2010 wrapping DatabaseDoesNotExist)',
      adapterError('P2010', { originalCode: '3D000', originalMessage: 'database "nope" does not exist', kind: 'DatabaseDoesNotExist', db: 'nope' }),
    ],
    [
      'a $transaction start (P1003)',
      adapterError('P1003', { originalCode: '3D000', originalMessage: 'database "nope" does not exist', kind: 'DatabaseDoesNotExist', db: 'nope' }),
    ],
    ['plain pg', pgError('3D000', 'FATAL', 'database "nope" does not exist', 'InitPostgres')],
  ])('reports a missing database from %s as database.not_found (category unavailable), not as a connection fault', (_label, error) => {
    expect(isConnectionFault(error)).toBe(false);
    const normalized = normalizeDatabaseError(error, 'x');
    expect(normalized).toMatchObject({ code: 'database.not_found', category: 'unavailable', details: { sqlState: '3D000' } });
    expect(normalized.message).not.toContain('nope');
  });

  it.each([
    'Transaction API error: Transaction already closed: A query cannot be executed on a committed transaction.',
    'Transaction API error: Transaction already closed: A query cannot be executed on a transaction that was rolled back.',
    "Transaction API error: Transaction not found. Transaction ID is invalid, refers to an old closed transaction Prisma doesn't have information about anymore, or was obtained before disconnecting.",
  ])('reports a closed transaction client (P2028: %s) as database.transaction_closed, never as retry later', (message) => {
    const error = Object.assign(new Error(`\nInvalid \`prisma.$queryRaw()\` invocation:\n\n\n${message}`), {
      name: 'PrismaClientKnownRequestError',
      code: 'P2028',
      meta: {},
      clientVersion: '7.10.1',
    });
    expect(isConnectionFault(error)).toBe(false);
    expect(normalizeDatabaseError(error, 'x')).toMatchObject({ code: 'database.transaction_closed', category: 'validation', field: 'db' });
  });

  it.each([
    [
      'an undefined table through Prisma (P2010 wrapping TableDoesNotExist)',
      adapterError('P2010', {
        originalCode: '42P01',
        originalMessage: 'relation "runledger.job_queue" does not exist',
        kind: 'TableDoesNotExist',
        table: 'runledger.job_queue',
      }),
      true,
    ],
    [
      'an undefined schema through Prisma (P2010, 3F000)',
      adapterError('P2010', {
        originalCode: '3F000',
        originalMessage: 'schema "runledger" does not exist',
        kind: 'postgres',
        code: '3F000',
        severity: 'ERROR',
      }),
      true,
    ],
    ['an undefined type (42704)', pgError('42704', 'ERROR', 'type "runledger.JobStatus" does not exist', 'typenameType'), true],
    ['an undefined table, plain pg', pgError('42P01', 'ERROR', 'relation "runledger.job_definitions" does not exist', 'parserOpenTable'), true],
    ["the host's own undefined table", pgError('42P01', 'ERROR', 'relation "orders" does not exist', 'parserOpenTable'), false],
    ['a schema whose name merely starts the same', pgError('3F000', 'ERROR', 'schema "runledger_old" does not exist', 'LookupExplicitNamespace'), false],
  ])("reports %s as migrate.required only when the object is runledger's", (_label, error, own) => {
    expect(isConnectionFault(error)).toBe(false);
    expect(normalizeDatabaseError(error, 'x').code).toBe(own ? 'migrate.required' : 'database.error');
  });

  it('leaves other database errors and non-database errors alone', () => {
    const uniqueViolation = adapterError('P2010', { kind: 'UniqueConstraintViolation', originalCode: '23505', originalMessage: 'duplicate key' });
    expect(isConnectionFault(uniqueViolation)).toBe(false);
    expect(normalizeDatabaseError(uniqueViolation, 'x').code).toBe('database.error');
    expect(isConnectionFault(new Error('Connection terminated by the handler on purpose, really'))).toBe(false);
    expect(isConnectionFault(new TypeError('x is undefined'))).toBe(false);
    expect(isConnectionFault(new ValidationError('job.invalid_input', 'payload', 'bad'))).toBe(false);
    // A RunledgerError's cause is not re-read: a conflict stays a conflict.
    expect(isConnectionFault(new ConflictError('job.lease_owner_mismatch', 'lost', { cause: new Error('Connection terminated unexpectedly') }))).toBe(false);
  });
});

describe('retrying a lease-fenced write', () => {
  const unavailable = () => new UnavailableError('database.unavailable', 'The database is unavailable; retry later.');

  it('retries transient failures with pauses that never exceed 2 s, until the write gets through', async () => {
    const delays: number[] = [];
    let calls = 0;
    const result = await retryLeaseWrite(
      async () => {
        calls += 1;
        if (calls < 4) throw unavailable();
        return 'written';
      },
      { deadline: () => Date.now() + 60_000, onRetry: (_error, _failures, delayMs) => delays.push(delayMs), random: () => 0 },
    );
    expect(result).toBe('written');
    expect(delays).toEqual([50, 100, 200]);
    expect(delays.every((delay) => delay <= LEASE_RETRY_MAX_MS)).toBe(true);
  });

  it('gives up at the lease deadline, not after a number of attempts', async () => {
    const started = Date.now();
    let calls = 0;
    const error = await retryLeaseWrite(
      async () => {
        calls += 1;
        throw unavailable();
      },
      { deadline: () => started + 700 },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'database.unavailable' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(calls).toBeGreaterThan(3);
  });

  it('does not retry what a retry cannot fix', async () => {
    let calls = 0;
    const mismatch = new ConflictError('job.lease_owner_mismatch', 'The job is no longer leased to this worker.');
    const error = await retryLeaseWrite(
      async () => {
        calls += 1;
        throw mismatch;
      },
      { deadline: () => Date.now() + 60_000 },
    ).catch((e: unknown) => e);
    expect(error).toBe(mismatch);
    expect(calls).toBe(1);
  });

  it('keeps the lease deadline on the local clock from when the grant was sent', () => {
    const lease = { jobId: 'j', leaseExpiresAt: new Date(0) };
    expect(leaseDeadline(lease)).toBe(0); // unknown to the worker: the database's expiry
    leaseGranted(lease, 1_000, 30);
    expect(leaseDeadline(lease)).toBe(31_000);
  });
});
