/**
 * A throwaway PgBouncer in `pool_mode = transaction` in front of a PostgreSQL
 * server, as production puts one in front of the host's database: for the
 * test harness (test/harness/global-setup.ts) and `npm run chaos -- --pooler`.
 *
 * Its own config, auth file and port in a temp dir, removed at `stop()`.
 * Every database of the server is reachable through it (`* =` fallback), as
 * the server's own user with the URL's password (or a generated one when the
 * server trusts the user). Clients authenticate with SCRAM; the admin console
 * (database `pgbouncer`) answers that user.
 *
 * Debian's package (1.18 on these machines) has no protocol-level prepared
 * statements: a named statement prepared in one transaction is on whichever
 * backend served it, so clients behind it must not name statements
 * (`createPrismaClient(url, { preparedStatements: false })` or `?pgbouncer=true`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './postgres-server.js';

export interface PgBouncer {
  /** The server's URL with the pooler's host and port: same user, password and database. */
  url: string;
  /** The admin console (`SHOW CLIENTS`, `SHOW SERVERS`, ...): simple-query protocol only. */
  adminUrl: string;
  /** Version line the binary printed (`PgBouncer 1.18.0`). */
  version: string;
  stop(): Promise<void>;
}

export interface StartPgBouncerOptions {
  /** Superuser (or any) URL of the server to pool; its user and password log in through the pooler. */
  serverUrl: string;
  /** Server connections per database and user (`default_pool_size`). Default 50. */
  poolSize?: number;
  /** More logins than the server URL's (a test's own role): user and password, in the auth file too. */
  users?: { user: string; password: string }[];
  /** The binary; default PGBOUNCER_PATH, then `pgbouncer` on the PATH, then /usr/sbin (Debian). */
  binary?: string;
  log?: (line: string) => void;
}

/** The binary to run, or undefined when there is none (say why with `pgBouncerMissingReason`). */
export function findPgBouncer(): string | undefined {
  if (process.env.PGBOUNCER_PATH) return existsSync(process.env.PGBOUNCER_PATH) ? process.env.PGBOUNCER_PATH : undefined;
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin'];
  return dirs
    .filter(Boolean)
    .map((dir) => path.join(dir, 'pgbouncer'))
    .find((candidate) => existsSync(candidate));
}

export const PGBOUNCER_MISSING = "no pgbouncer binary (install Debian's `pgbouncer` package, or set PGBOUNCER_PATH)";

const READY_TIMEOUT_MS = 15_000;

export async function startPgBouncer(options: StartPgBouncerOptions): Promise<PgBouncer> {
  const binary = options.binary ?? findPgBouncer();
  if (!binary) throw new Error(PGBOUNCER_MISSING);
  const log = options.log ?? (() => undefined);
  const server = new URL(options.serverUrl);
  const user = decodeURIComponent(server.username || process.env.PGUSER || os.userInfo().username);
  const password = decodeURIComponent(server.password) || process.env.PGPASSWORD || randomBytes(12).toString('hex');
  const port = await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runledger-pgbouncer-'));
  // PgBouncer refuses to run as root: it is started with `-u`, and that user reads the files after the switch.
  const runAs = process.getuid?.() === 0 ? (['postgres', 'nobody'].find(existsUser) ?? 'nobody') : undefined;
  if (runAs) await chmod(dir, 0o755);
  const ini = path.join(dir, 'pgbouncer.ini');
  const quote = (value: string) => `"${value.replace(/"/g, '""')}"`;
  const sslmode = server.searchParams.get('sslmode');
  const logins = [{ user, password }, ...(options.users ?? [])];
  await writeFile(path.join(dir, 'userlist.txt'), logins.map((l) => `${quote(l.user)} ${quote(l.password)}\n`).join(''), { mode: 0o644 });
  await writeFile(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1'} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 50}`,
      'max_client_conn = 2000',
      'auth_type = scram-sha-256',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `admin_users = ${user}`,
      // A refused login (an outage under test) is retried after 1 s, not the default 15.
      'server_login_retry = 1',
      `server_tls_sslmode = ${sslmode && sslmode !== 'disable' ? 'require' : 'disable'}`,
      'ignore_startup_parameters = extra_float_digits',
      'log_connections = 0',
      'log_disconnections = 0',
      // SHOW STATS totals are refreshed every stats_period: every second, so a run's summary is current.
      'stats_period = 1',
      'log_stats = 0',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );

  const child = spawn(binary, runAs ? ['-u', runAs, ini] : [ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const remember = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) output.push(line);
    output.splice(0, Math.max(0, output.length - 40));
  };
  child.stdout.on('data', remember);
  child.stderr.on('data', remember);
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
    output.push(`spawn ${binary}: ${error.message}`);
  });
  const killOnExit = () => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });

  const pooled = new URL(options.serverUrl);
  pooled.hostname = '127.0.0.1';
  pooled.port = String(port);
  pooled.username = encodeURIComponent(user);
  pooled.password = encodeURIComponent(password);
  pooled.searchParams.delete('sslmode');
  const admin = new URL(pooled);
  admin.pathname = '/pgbouncer';

  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (!spawnError && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await waitUntilServing(pooled.toString(), child, () => spawnError);
  } catch (error) {
    await stop();
    throw new Error(`pgbouncer did not start: ${(error as Error).message}\n${output.join('\n')}`);
  }
  const version = await versionOf(binary);
  log(`started ${version} (pool_mode = transaction) on 127.0.0.1:${port} in front of ${server.hostname}:${server.port || '5432'}`);
  return { url: pooled.toString(), adminUrl: admin.toString(), version, stop };
}

/** Connects through the pooler and runs a statement on the server behind it. */
async function waitUntilServing(url: string, child: ChildProcess, spawnError: () => Error | undefined): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const failed = spawnError();
    if (failed) throw failed;
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (code ${child.exitCode}, signal ${child.signalCode})`);
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

function versionOf(binary: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(binary, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.once('error', () => resolve('PgBouncer'));
    child.once('exit', () => resolve(text.split('\n')[0]?.trim() || 'PgBouncer'));
  });
}

/** A local user PgBouncer can switch to (`-u`): one with an /etc/passwd entry. */
function existsUser(name: string): boolean {
  try {
    return new RegExp(`^${name}:`, 'm').test(readFileSync('/etc/passwd', 'utf8'));
  } catch {
    return false;
  }
}
