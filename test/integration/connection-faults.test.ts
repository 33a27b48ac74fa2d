/**
 * Connection faults reach callers as `database.unavailable` (category
 * `unavailable`, a message without SQL) from every public entry point: a
 * refused connection, a session the server terminates mid-statement
 * (pg_terminate_backend: SQLSTATE 57P01), and a connection dropped under a
 * statement (pg's code-less "Connection terminated unexpectedly"). The CLI
 * maps them to exit code 5 with one line on stderr.
 */
import net from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { createPrismaClient } from '../../src/client/connect.js';
import {
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  compareAndReplaySucceededJob,
  completeExternalWorkflowStep,
  completeJob,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  heartbeatJob,
  listJobEvents,
  listJobs,
  listWorkflowRuns,
  migrate,
  reapExpiredLeases,
  releaseJob,
  type RunledgerError,
  workflow,
  type ClaimedJob,
  type Db,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { normalizeDatabaseError } from '../../src/errors/database-error.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { useTestDatabase } from '../harness/database.js';
import { refuseConnections } from '../harness/database-outage.js';
import { startFaultProxy } from '../harness/fault-proxy.js';
import { runledgerErrorOf as failure } from '../harness/errors.js';

const db = useTestDatabase();

/** A URL on which nothing listens: a port this process bound and released. */
async function refusedUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const url = new URL(db.url);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}

function expectUnavailable(error: RunledgerError, label: string): void {
  expect({ label, code: error.code, category: error.category }).toEqual({ label, code: 'database.unavailable', category: 'unavailable' });
  expect(error.message).not.toMatch(/select|update|insert|runledger\.|prisma/i);
  expect(JSON.stringify(error)).not.toMatch(/select|update|insert/i);
}

const lease = (): ClaimedJob => ({ jobId: newId(), runNumber: 1, attempt: 1, workerId: 'w', leaseExpiresAt: new Date() }) as unknown as ClaimedJob;

/** One call of every kind of public function: reads, enqueues (owned transaction or one statement), lifecycle writes, workflow operations. */
const CALLS: Record<string, (db: Db) => Promise<unknown>> = {
  enqueueJob: (c) => enqueueJob(c, { jobType: 'faults.x', payload: {} }),
  'enqueueJob (keyed)': (c) => enqueueJob(c, { jobType: 'faults.x', payload: {}, idempotencyKey: 'k' }),
  enqueueJobs: (c) => enqueueJobs(c, [{ jobType: 'faults.x', payload: {} }]),
  getJob: (c) => getJob(c, { scope: noOrganizationScope(), jobId: newId() }),
  listJobs: (c) => listJobs(c, { scope: noOrganizationScope() }),
  listJobEvents: (c) => listJobEvents(c, { scope: noOrganizationScope(), jobId: newId() }),
  claimJobs: (c) => claimJobs(c, { workerId: 'w', limit: 1, leaseSeconds: 30 }),
  heartbeatJob: (c) => heartbeatJob(c, lease()),
  completeJob: (c) => completeJob(c, lease()),
  failJob: (c) => failJob(c, { ...lease(), error: { code: 'x.y', message: 'm' }, retryable: true }),
  releaseJob: (c) => releaseJob(c, lease()),
  cancelJob: (c) => cancelJob(c, { jobId: newId(), scope: noOrganizationScope() }),
  reapExpiredLeases: (c) => reapExpiredLeases(c, { limit: 10 }),
  enqueueWorkflowRun: (c) => enqueueWorkflowRun(c, workflow('faults.wf').job('a', 'faults.a', {}).build()),
  getWorkflowRun: (c) => getWorkflowRun(c, { scope: noOrganizationScope(), workflowRunId: newId() }),
  listWorkflowRuns: (c) => listWorkflowRuns(c, { scope: noOrganizationScope() }),
  completeExternalWorkflowStep: (c) =>
    completeExternalWorkflowStep(c, { workflowRunId: newId(), stepKey: 'e', scope: noOrganizationScope(), outcome: { status: 'succeeded', output: null } }),
  cancelWorkflowRun: (c) => cancelWorkflowRun(c, { workflowRunId: newId(), scope: noOrganizationScope() }),
  compareAndReplaySucceededJob: (c) =>
    compareAndReplaySucceededJob(c, { scope: noOrganizationScope(), sourceJobId: newId(), expectedRunNumber: 1, replayRequestKey: 'r', reason: 'again' }),
};

describe('a refused connection', () => {
  let refused: PrismaClient;
  let url: string;
  beforeAll(async () => {
    url = await refusedUrl();
    refused = createPrismaClient(url, { max: 2 });
  });
  afterAll(async () => {
    await refused.$disconnect();
  });

  it('is database.unavailable from every kind of public function', async () => {
    for (const [label, call] of Object.entries(CALLS)) expectUnavailable(await failure(call(refused)), label);
    expect((await failure(migrate({ connectionString: url }))).category).toBe('unavailable');
  });
});

describe('a database that is not accepting connections (SQLSTATE 55000)', () => {
  it('is database.unavailable from every kind of public function, on a new client and on one whose sessions were terminated', async () => {
    const fresh = db.newClient({ max: 2 });
    const warm = db.newClient({ max: 2 });
    // A pooled session, and the isolation checks, before the outage: the lookup must reach the database and miss.
    await expect(getJob(warm, { scope: noOrganizationScope(), jobId: newId() })).rejects.toMatchObject({ code: 'job.not_found' });
    const outage = await refuseConnections(db.name, { terminate: true });
    try {
      for (const [label, call] of Object.entries(CALLS)) {
        expectUnavailable(await failure(call(fresh)), `${label} (new client)`);
        expectUnavailable(await failure(call(warm)), `${label} (terminated sessions)`);
      }
      // The refusal itself, as the server words it, is what these calls met (not some other failure).
      const plain = new pg.Client({ connectionString: db.url });
      const refusal = await plain.connect().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refusal).toMatchObject({ code: '55000', message: expect.stringContaining('not currently accepting connections') });
      expect(normalizeDatabaseError(refusal, 'connect')).toMatchObject({ code: 'database.unavailable', category: 'unavailable' });
    } finally {
      await outage.end();
    }
    // Both clients work again once the database accepts sessions.
    for (const client of [fresh, warm]) expect((await failure(getJob(client, { scope: noOrganizationScope(), jobId: newId() }))).code).toBe('job.not_found');
  });
});

describe('a database that does not exist (SQLSTATE 3D000)', () => {
  it('is database.not_found (category unavailable) from every kind of public function', async () => {
    const url = new URL(db.url);
    url.pathname = `/runledger_missing_${newId().replaceAll('-', '').slice(-12)}`;
    const missing = createPrismaClient(url.toString(), { max: 2 });
    try {
      for (const [label, call] of Object.entries(CALLS)) {
        const error = await failure(call(missing));
        expect({ label, code: error.code, category: error.category }).toEqual({ label, code: 'database.not_found', category: 'unavailable' });
        expect(error.message).not.toContain('runledger_missing_');
      }
    } finally {
      await missing.$disconnect();
    }
  });
});

describe('a connection lost under a statement', () => {
  /**
   * Runs `call` through the proxy while a transaction on the direct client,
   * opened by `hold`, makes its statement wait for a lock; once PostgreSQL
   * shows it waiting, `kill` ends its connection: pg_terminate_backend
   * (57P01 reaches the client) or a cut network (pg's "Connection terminated
   * unexpectedly"). Returns what the call threw.
   */
  async function loseConnectionUnder(
    hold: (tx: Db) => Promise<unknown>,
    call: (c: Db) => Promise<unknown>,
    kill: 'terminate' | 'cut',
  ): Promise<RunledgerError> {
    const proxy = await startFaultProxy(db.url);
    const client = createPrismaClient(proxy.url, { max: 1 });
    // Warm the isolation check and the pooled connection: the lookup must reach the database and miss.
    await expect(getJob(client, { scope: noOrganizationScope(), jobId: newId() })).rejects.toMatchObject({ code: 'job.not_found' });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const holder = db.prisma.$transaction(
      async (tx) => {
        await hold(tx);
        holding();
        await released;
      },
      { timeout: 30_000 },
    );
    try {
      await held;
      const outcome = failure(call(client));
      const pid = await waitForLockWaiter();
      if (kill === 'terminate') await db.prisma.$queryRaw`SELECT pg_terminate_backend(${pid}::int)`;
      else await proxy.cut();
      return await outcome;
    } finally {
      release();
      await holder;
      if (kill === 'cut') {
        // The same client works again once the network does.
        await proxy.restore();
        expect(await failure(getJob(client, { scope: noOrganizationScope(), jobId: newId() })).then((e) => e.code)).toBe('job.not_found');
      }
      await client.$disconnect();
      await proxy.close();
    }
  }

  /** The pid of the backend waiting for a lock (bounded wait, polling the condition). */
  async function waitForLockWaiter(): Promise<number> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const rows = await db.prisma.$queryRaw<{ pid: number }[]>`
        SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      if (rows[0]) return rows[0].pid;
      if (Date.now() > deadline) throw new Error('the call never waited for the lock');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function leasedJob(): Promise<ClaimedJob> {
    const jobType = `faults.${newId()}`;
    await enqueueJob(db.prisma, { jobType, payload: {} });
    const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
    return job!;
  }

  const lockJob = (job: ClaimedJob) => async (tx: Db) => tx.$queryRaw`SELECT 1 FROM runledger.job_queue WHERE id = ${job.jobId}::uuid FOR UPDATE`;

  it.each(['terminate', 'cut'] as const)('is database.unavailable from the lifecycle writes (%s)', async (kill) => {
    const cases: [string, (job: ClaimedJob) => (c: Db) => Promise<unknown>][] = [
      ['heartbeatJob', (job) => (c) => heartbeatJob(c, job)],
      ['completeJob', (job) => (c) => completeJob(c, { ...job, output: 1 })],
      ['failJob', (job) => (c) => failJob(c, { ...job, error: { code: 'x.y', message: 'm' }, retryable: true })],
      ['releaseJob', (job) => (c) => releaseJob(c, job)],
      ['cancelJob', (job) => (c) => cancelJob(c, { jobId: job.jobId, scope: noOrganizationScope() })],
    ];
    for (const [label, makeCall] of cases) {
      const job = await leasedJob();
      expectUnavailable(await loseConnectionUnder(lockJob(job), makeCall(job), kill), `${label} (${kill})`);
      // A terminated backend rolled its statement back. (A cut one may have committed: the response is what was lost.)
      if (kill === 'terminate')
        expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: job.jobId })).toMatchObject({ status: 'LEASED', attempt: 1 });
    }
  });

  it.each(['terminate', 'cut'] as const)('is database.unavailable from a keyed enqueue waiting on an uncommitted duplicate (%s)', async (kill) => {
    const key = `faults-${newId()}`;
    const enqueue = (c: Db) => enqueueJob(c, { jobType: 'faults.k', payload: {}, idempotencyKey: key });
    expectUnavailable(await loseConnectionUnder(enqueue, enqueue, kill), `enqueueJob (${kill})`);
  });
});

describe('the CLI', () => {
  afterEach(() => vi.restoreAllMocks());

  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const out: string[] = [];
    const err: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      err.push(String(chunk));
      return true;
    });
    try {
      const code = await main(['node', 'runledger', ...args]);
      return { code, stdout: out.join(''), stderr: err.join('') };
    } finally {
      vi.restoreAllMocks();
    }
  }

  it('exits 5 with one line on stderr when the database is unavailable, and prints the error JSON with --json', async () => {
    const url = await refusedUrl();
    for (const command of [['jobs', 'show', newId()], ['runs', 'list'], ['migrate']]) {
      const human = await cli('--database-url', url, ...command);
      expect({ command, code: human.code }).toEqual({ command, code: 5 });
      expect(human.stderr.trim().split('\n')).toHaveLength(1);
      expect(human.stderr).not.toMatch(/\n\s+at /);
      expect(human.stdout).toBe('');

      const json = await cli('--json', '--database-url', url, ...command);
      expect(json.code).toBe(5);
      expect(JSON.parse(json.stderr)).toMatchObject({ category: 'unavailable' });
    }
    expect(JSON.parse((await cli('--json', '--database-url', url, 'jobs', 'show', newId())).stderr)).toMatchObject({ code: 'database.unavailable' });
  });

  it('exits 5 for a database that does not exist (database.not_found) and for one not accepting connections', async () => {
    const url = new URL(db.url);
    url.pathname = '/runledger_missing_cli';
    for (const command of [['jobs', 'show', newId()], ['runs', 'list'], ['stats'], ['migrate']]) {
      const missing = await cli('--json', '--database-url', url.toString(), ...command);
      expect({ command, code: missing.code, stdout: missing.stdout }).toEqual({ command, code: 5, stdout: '' });
      expect(JSON.parse(missing.stderr)).toMatchObject({ category: 'unavailable' });
    }
    expect(JSON.parse((await cli('--json', '--database-url', url.toString(), 'runs', 'list')).stderr)).toMatchObject({ code: 'database.not_found' });
    const outage = await refuseConnections(db.name);
    try {
      const refused = await cli('--json', '--database-url', db.url, 'runs', 'list');
      expect([refused.code, JSON.parse(refused.stderr).code]).toEqual([5, 'database.unavailable']);
    } finally {
      await outage.end();
    }
  });

  describe('against a server that accepts TCP and never answers', () => {
    let silent: net.Server;
    const held: net.Socket[] = [];
    let silentUrl: string;
    beforeAll(async () => {
      silent = net.createServer((socket) => void held.push(socket)); // accepts, reads nothing, writes nothing
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      silentUrl = `postgresql://postgres@127.0.0.1:${(silent.address() as net.AddressInfo).port}/app`;
    });
    afterAll(async () => {
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    });

    /** The CLI's answer, or a failure naming the hang if it has none within `boundMs`. */
    async function bounded(boundMs: number, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
      const started = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const hang = new Promise<never>(
        (_resolve, reject) => (timer = setTimeout(() => reject(new Error(`runledger ${args.join(' ')} still hanging after ${boundMs} ms`)), boundMs)),
      );
      try {
        const result = await Promise.race([cli(...args), hang]);
        return { ...result, ms: Date.now() - started };
      } finally {
        clearTimeout(timer);
      }
    }

    it('gives up after --connect-timeout and exits 5, for reads, writes and migrate', async () => {
      for (const command of [['jobs', 'show', newId()], ['runs', 'list'], ['jobs', 'cancel', newId()], ['migrate']]) {
        const result = await bounded(8_000, '--json', '--connect-timeout', '1', '--database-url', silentUrl, ...command);
        expect({ command, code: result.code, stdout: result.stdout }).toEqual({ command, code: 5, stdout: '' });
        expect(JSON.parse(result.stderr)).toMatchObject({ category: 'unavailable' });
        expect(result.ms).toBeGreaterThanOrEqual(900);
        expect(result.ms).toBeLessThan(6_000);
      }
    });

    it('takes the timeout from $RUNLEDGER_CONNECT_TIMEOUT, and refuses one that is not a whole number of seconds', async () => {
      vi.stubEnv('RUNLEDGER_CONNECT_TIMEOUT', '1');
      try {
        const result = await bounded(8_000, '--json', '--database-url', silentUrl, 'runs', 'list');
        expect([result.code, JSON.parse(result.stderr).code]).toEqual([5, 'database.unavailable']);
        vi.stubEnv('RUNLEDGER_CONNECT_TIMEOUT', 'soon');
        const bad = await cli('--json', '--database-url', silentUrl, 'runs', 'list');
        expect([bad.code, bad.stdout]).toEqual([2, '']);
      } finally {
        vi.unstubAllEnvs();
      }
      for (const value of ['0', '1.5', '-1'])
        expect((await cli('--json', '--connect-timeout', value, '--database-url', silentUrl, 'runs', 'list')).code).toBe(2);
    });
  });

  it('lists its exit codes in --help', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:[\s\S]*5\s+database unavailable/);
    expect(help.stdout).toMatch(/--connect-timeout <seconds>[\s\S]*default: 10,\s+env:\s+RUNLEDGER_CONNECT_TIMEOUT/);
  });
});
