/**
 * What `start()` asks the database once before it opens anything, so a
 * worker that could never work refuses to start with the reason instead of
 * failing every pass: one statement on the worker's client (reachable, not
 * ended, writable, migrated to REQUIRED_MIGRATION) and, at the same time,
 * one on each transactional job type's client (the same database).
 *
 * "The same database" is the database name and the server instance
 * (`pg_postmaster_start_time()`), not the address: behind a transaction-mode
 * PgBouncer (or a proxy, or a unix socket on one side) `inet_server_addr()`
 * and the port differ for one database, while both of these are properties
 * of the server, the same on whichever backend the pooler picks. A replica
 * of the worker's database has another start time, so a transactional client
 * on a replica is refused too (its commits could not carry the job's outcome).
 * `pg_control_system()`'s system identifier would not tell a replica apart
 * and is revoked from non-superusers on some managed services.
 */
import { sqltag } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db, PrismaClientLike } from '../client/types.js';
import { InternalError, isRunledgerError, UnavailableError, ValidationError } from '../errors/runledger-error.js';
import { REQUIRED_MIGRATION } from '../migrate/schema-version.js';
import type { AnyJobDefinition } from '../job/contract.js';

interface ServerIdentity {
  database: string;
  /** `pg_postmaster_start_time()` as epoch seconds text: no DateStyle or type parser can change it. */
  server_started: string;
  read_only: boolean;
}

const OPERATION = 'start the worker';

/**
 * Throws the reason `db` cannot run a worker, or a transactional definition's
 * client is not on its database: `client.pool_ended`, `database.unavailable`,
 * `database.read_only`, `migrate.required` (details.requiredMigration), or
 * `worker.transaction_database_mismatch` (details.jobType).
 */
export async function checkWorkerDatabase(db: Db, definitions: Iterable<AnyJobDefinition>): Promise<void> {
  const transactional = new Map<PrismaClientLike, string>();
  for (const definition of definitions) {
    if (definition.transaction && !transactional.has(definition.transaction)) transactional.set(definition.transaction, definition.jobType);
  }
  // Settled together: a worker probe that fails is the reason, whatever the others answered.
  const [own, ...others] = await Promise.allSettled([workerProbe(db), ...[...transactional.keys()].map((client) => identityProbe(client))]);
  if (own!.status === 'rejected') throw missingSchema(own!.reason) ?? own!.reason;
  const worker = own!.value;
  if (worker.read_only) throw readOnly('db');
  if (!worker.migrated) throw notMigrated();
  const jobTypes = [...transactional.values()];
  others.forEach((other, index) => {
    const jobType = jobTypes[index]!;
    if (other.status === 'rejected') throw other.reason;
    const { database, server_started, read_only } = other.value;
    if (database !== worker.database || server_started !== worker.server_started) {
      throw new ValidationError(
        'worker.transaction_database_mismatch',
        'transaction',
        `The transaction client of job type ${jobType} is connected to another database than the worker's db: its attempts could never record their outcome. Give it a client on the worker's database.`,
        {
          internalMessage: `${OPERATION}: worker on ${worker.database} (server started ${worker.server_started}), ${jobType}'s transaction client on ${database} (server started ${server_started})`,
          details: { jobType },
        },
      );
    }
    if (read_only) throw readOnly('transaction', jobType);
  });
}

/** The server and database a client's statements reach, and whether its sessions can write. */
const IDENTITY = sqltag`
  current_database()::text AS database,
  extract(epoch FROM pg_postmaster_start_time())::text AS server_started,
  current_setting('transaction_read_only') = 'on' AS read_only`;

async function identityProbe(db: Db): Promise<ServerIdentity> {
  const [row] = await withStatement(db, OPERATION, async (client) => client.$queryRaw<ServerIdentity[]>`SELECT ${IDENTITY}`, { readCommitted: false });
  return row!;
}

/** The identity and whether REQUIRED_MIGRATION is recorded; a missing history table fails as migrate.required. */
async function workerProbe(db: Db): Promise<ServerIdentity & { migrated: boolean }> {
  const [row] = await withStatement(
    db,
    OPERATION,
    async (client) => client.$queryRaw<(ServerIdentity & { migrated: boolean })[]>`
      SELECT ${IDENTITY},
             EXISTS (SELECT 1 FROM runledger._prisma_migrations
                      WHERE migration_name = ${REQUIRED_MIGRATION} AND finished_at IS NOT NULL AND rolled_back_at IS NULL) AS migrated`,
    { readCommitted: false },
  );
  return row!;
}

function notMigrated(): InternalError {
  return new InternalError(
    'migrate.required',
    `This database is not migrated to the schema this version of runledger needs (${REQUIRED_MIGRATION}): run migrate() (or \`runledger migrate\`) first.`,
    { internalMessage: `${OPERATION}: ${REQUIRED_MIGRATION} not in runledger._prisma_migrations`, details: { requiredMigration: REQUIRED_MIGRATION } },
  );
}

/** A never-migrated database (no runledger schema or history) answers like one migrated too far back. */
function missingSchema(error: unknown): InternalError | undefined {
  return isRunledgerError(error, 'migrate.required') ? notMigrated() : undefined;
}

function readOnly(field: 'db' | 'transaction', jobType?: string): UnavailableError {
  const whose = jobType === undefined ? "The worker's db" : `The transaction client of job type ${jobType}`;
  return new UnavailableError(
    'database.read_only',
    `${whose} opens read-only sessions (a replica, or default_transaction_read_only = on): point it at the primary.`,
    { internalMessage: `${OPERATION}: transaction_read_only is on for ${field}`, details: jobType === undefined ? { field } : { field, jobType } },
  );
}
