/**
 * Detects runledger migrations that were applied but recorded somewhere
 * runledger does not look. `prisma migrate deploy` writes its history into
 * the schema of its connection string: without `?schema=runledger` that is
 * the host's `public._prisma_migrations`. runledger's objects then exist while
 * `runledger._prisma_migrations` lacks their rows, and re-applying the SQL
 * fails on the first CREATE ("type job_status already exists"). Checked under
 * the migration lock, before anything is applied, so the operator gets what
 * happened and how to fix it instead.
 */
import type pg from 'pg';
import { ConflictError } from '../errors/runledger-error.js';
import { RUNLEDGER_SCHEMA } from '../model/constants.js';

/**
 * Throws `migrate.history_in_other_schema` when runledger's schema already has
 * objects and some `pending` migration is recorded as applied in another
 * schema's `_prisma_migrations`; `migrate.untracked_schema_objects` when the
 * schema has objects but no history anywhere. A no-op on an empty schema
 * (applying will work; a stray row elsewhere is harmless to runledger).
 */
export async function ensurePendingNotAppliedElsewhere(client: pg.ClientBase, pending: readonly string[], recordedHere: number): Promise<void> {
  if (pending.length === 0 || !(await runledgerObjectsExist(client))) return;
  const elsewhere = await findHistoryElsewhere(client, pending);
  if (elsewhere) {
    const { schema, migrations } = elsewhere;
    const here = `"${RUNLEDGER_SCHEMA}"._prisma_migrations`;
    const there = `${client.escapeIdentifier(schema)}._prisma_migrations`;
    const names = migrations.map((name) => `'${name.replace(/'/g, "''")}'`).join(', ');
    const columns = 'id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count';
    const fixSql = [
      `INSERT INTO ${here} (${columns}) SELECT ${columns} FROM ${there} WHERE migration_name IN (${names}) AND finished_at IS NOT NULL AND rolled_back_at IS NULL`,
      `DELETE FROM ${there} WHERE migration_name IN (${names})`,
    ];
    throw new ConflictError(
      'migrate.history_in_other_schema',
      `runledger's migrations ${migrations.join(', ')} were applied, but their history rows are in the "${schema}" schema's _prisma_migrations ` +
        `instead of "${RUNLEDGER_SCHEMA}"'s: most likely the Prisma CLI ran them with a DATABASE_URL lacking ?schema=${RUNLEDGER_SCHEMA}. ` +
        `Nothing was applied. To fix it, move those rows from ${there} to ${here} (the statements are in this error's details.fixSql), ` +
        `or record them with \`prisma migrate resolve --applied <name>\` run with ?schema=${RUNLEDGER_SCHEMA} and delete them from ${there}; then migrate again.`,
      {
        internalMessage: `migrate: runledger objects exist, ${migrations.join(', ')} recorded in ${there}, not ${here}; fix: ${fixSql.join('; ')}`,
        details: { historySchema: schema, migrations, fixSql },
      },
    );
  }
  if (recordedHere === 0) {
    throw new ConflictError(
      'migrate.untracked_schema_objects',
      `The "${RUNLEDGER_SCHEMA}" schema already has objects, but no _prisma_migrations table this connection can read records runledger's migrations. ` +
        `Nothing was applied. If the Prisma CLI applied them elsewhere, record them with \`prisma migrate resolve --applied <name>\` run with ?schema=${RUNLEDGER_SCHEMA}; ` +
        `if the schema is left over from something else, drop it; then migrate again.`,
      { details: { migrations: [...pending] } },
    );
  }
}

/** Anything of runledger's own besides the history table: a table, view, sequence or enum type. */
async function runledgerObjectsExist(client: pg.ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ found: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND c.relname <> '_prisma_migrations'
       UNION ALL
       SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = $1 AND t.typtype = 'e'
     ) AS found`,
    [RUNLEDGER_SCHEMA],
  );
  return rows[0]?.found === true;
}

/**
 * The first other schema (by name) whose `_prisma_migrations` records any of
 * `names` as applied. Only tables with Prisma's history columns are read, so
 * an unrelated table of that name cannot make the query fail.
 */
async function findHistoryElsewhere(client: pg.ClientBase, names: readonly string[]): Promise<{ schema: string; migrations: string[] } | null> {
  const { rows: schemas } = await client.query<{ schema: string }>(
    `SELECT table_schema AS schema FROM information_schema.columns
      WHERE table_name = '_prisma_migrations' AND table_schema <> $1
        AND column_name IN ('migration_name', 'finished_at', 'rolled_back_at')
      GROUP BY table_schema HAVING count(*) = 3
      ORDER BY table_schema`,
    [RUNLEDGER_SCHEMA],
  );
  for (const { schema } of schemas) {
    const { rows } = await client.query<{ migration_name: string }>(
      `SELECT DISTINCT migration_name FROM ${client.escapeIdentifier(schema)}._prisma_migrations
        WHERE migration_name = ANY($1::text[]) AND finished_at IS NOT NULL AND rolled_back_at IS NULL
        ORDER BY migration_name`,
      [names],
    );
    if (rows.length > 0) return { schema, migrations: rows.map((row) => row.migration_name) };
  }
  return null;
}
