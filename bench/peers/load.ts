/**
 * Loads the benchmarked peers from bench/peers/node_modules, installing them
 * there on first use. They are not dependencies of the package: a user's
 * `npm ci` must neither download them nor warn about their engines (both
 * declare Node 22; they install and run on Node 20, where npm only warns
 * EBADENGINE). Resolution goes through bench/peers/package.json, so the
 * bench never picks up a copy that happens to sit in the root node_modules.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DbosModule, GraphileWorkerModule, PgBossModule } from './api.js';

const PEERS_DIR = fileURLToPath(new URL('.', import.meta.url));
const MANIFEST = fileURLToPath(new URL('./package.json', import.meta.url));

let installed = false;

/** `npm ci --prefix bench/peers` when bench/peers/node_modules is missing (the committed lockfile pins the versions: pg-boss, graphile-worker, DBOS Transact). */
export function ensurePeersInstalled(log: (line: string) => void = console.log): void {
  if (installed || existsSync(new URL('./node_modules/', import.meta.url))) {
    installed = true;
    return;
  }
  log(`installing the benchmarked peers into ${PEERS_DIR}node_modules (npm ci, first use only)`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--prefix', PEERS_DIR, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`npm ci --prefix ${PEERS_DIR} failed (exit ${result.status ?? result.signal})`);
  installed = true;
}

async function importPeer<T>(name: string): Promise<T> {
  ensurePeersInstalled();
  const resolved = createRequire(MANIFEST).resolve(name);
  return (await import(pathToFileURL(resolved).href)) as T;
}

/** The installed version, for the report. */
export function peerVersion(name: string): string {
  ensurePeersInstalled();
  // Read from disk: graphile-worker's `exports` does not expose its package.json.
  const manifest = JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

export const loadPgBoss = (): Promise<PgBossModule> => importPeer<PgBossModule>('pg-boss');
/** DBOS is CommonJS: its exports are on the namespace when Node's lexer finds them, on `default` always. */
export async function loadDbos(): Promise<DbosModule> {
  const loaded = await importPeer<Partial<DbosModule> & { default?: DbosModule }>('@dbos-inc/dbos-sdk');
  const DBOS = loaded.DBOS ?? loaded.default?.DBOS;
  if (!DBOS) throw new Error('@dbos-inc/dbos-sdk exports no DBOS class');
  return { DBOS };
}
export const loadGraphileWorker = (): Promise<GraphileWorkerModule> => importPeer<GraphileWorkerModule>('graphile-worker');
