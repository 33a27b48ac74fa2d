/**
 * Compares a Prisma schema (through Prisma's own DMMF) with what a migrated
 * database really has: every model's table, every scalar/enum field's column,
 * its type, nullability and default-presence, primary keys, unique
 * constraints, and every enum's values in order. Returns one line per
 * difference; an empty list means no drift.
 */
import prismaInternals from '@prisma/internals';
import type pg from 'pg';

const { getDMMF } = prismaInternals;

interface ColumnInfo {
  table: string;
  column: string;
  dataType: string;
  udtName: string;
  nullable: boolean;
  hasDefault: boolean;
  precision: number | null;
}

const SCALAR_TYPES: Record<string, string> = {
  String: 'text',
  Int: 'integer',
  BigInt: 'bigint',
  Float: 'double precision',
  Boolean: 'boolean',
  Json: 'jsonb',
  DateTime: 'timestamp without time zone',
  Decimal: 'numeric',
  Bytes: 'bytea',
};

const NATIVE_TYPES: Record<string, string> = {
  Uuid: 'uuid',
  Timestamptz: 'timestamp with time zone',
  Timestamp: 'timestamp without time zone',
  Text: 'text',
  Integer: 'integer',
  JsonB: 'jsonb',
  Json: 'json',
  VarChar: 'character varying',
};

export async function schemaDrift(datamodel: string, client: pg.ClientBase, schema: string): Promise<string[]> {
  const dmmf = await getDMMF({ datamodel });
  const problems: string[] = [];

  const { rows: columns } = await client.query<ColumnInfo>(
    `SELECT table_name AS "table", column_name AS "column", data_type AS "dataType", udt_name AS "udtName",
            is_nullable = 'YES' AS nullable, column_default IS NOT NULL AS "hasDefault",
            datetime_precision AS precision
       FROM information_schema.columns
      -- Tables only: views (runledger.job_trail) are read with raw SQL and have no Prisma model.
      WHERE table_schema = $1 AND table_name <> '_prisma_migrations'
        AND (table_schema, table_name) IN (SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE')`,
    [schema],
  );
  const { rows: enumRows } = await client.query<{ name: string; values: string[] }>(
    `SELECT t.typname AS name, array_agg(e.enumlabel ORDER BY e.enumsortorder)::text[] AS values
       FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = $1 GROUP BY t.typname`,
    [schema],
  );
  const { rows: keyRows } = await client.query<{ table: string; kind: string; columns: string[] }>(
    `SELECT c.relname AS "table", CASE WHEN i.indisprimary THEN 'primary' ELSE 'unique' END AS kind,
            array_agg(a.attname ORDER BY k.ordinality)::text[] AS columns
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ordinality) ON true
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
      WHERE n.nspname = $1 AND (i.indisprimary OR i.indisunique) AND i.indpred IS NULL AND i.indexprs IS NULL
      GROUP BY c.relname, i.indexrelid, i.indisprimary`,
    [schema],
  );

  const enumDbName = new Map<string, string>();
  const dbEnums = new Map(enumRows.map((row) => [row.name, row.values]));
  for (const prismaEnum of dmmf.datamodel.enums) {
    const name = prismaEnum.dbName ?? prismaEnum.name;
    enumDbName.set(prismaEnum.name, name);
    const dbValues = dbEnums.get(name);
    const expected = prismaEnum.values.map((value) => value.dbName ?? value.name);
    if (!dbValues) problems.push(`enum ${name}: missing in database`);
    else if (dbValues.join(',') !== expected.join(',')) {
      problems.push(`enum ${name}: database has [${dbValues.join(', ')}], schema.prisma has [${expected.join(', ')}]`);
    }
    dbEnums.delete(name);
  }
  for (const name of dbEnums.keys()) problems.push(`enum ${name}: in database but not in schema.prisma`);

  const byTable = new Map<string, Map<string, ColumnInfo>>();
  for (const column of columns) {
    if (!byTable.has(column.table)) byTable.set(column.table, new Map());
    byTable.get(column.table)!.set(column.column, column);
  }

  for (const model of dmmf.datamodel.models) {
    const table = model.dbName ?? model.name;
    const dbColumns = byTable.get(table);
    if (!dbColumns) {
      problems.push(`table ${table} (model ${model.name}): missing in database`);
      continue;
    }
    const fieldColumn = new Map<string, string>();
    for (const field of model.fields) {
      if (field.kind === 'object') continue;
      const column = field.dbName ?? field.name;
      fieldColumn.set(field.name, column);
      const where = `${table}.${column} (${model.name}.${field.name})`;
      const actual = dbColumns.get(column);
      if (!actual) {
        problems.push(`column ${where}: missing in database`);
        continue;
      }
      dbColumns.delete(column);
      // A list field is a PostgreSQL array (information_schema says ARRAY, whatever the element).
      const expectedType = field.isList
        ? 'ARRAY'
        : field.kind === 'enum'
          ? `enum ${enumDbName.get(field.type) ?? field.type}`
          : (NATIVE_TYPES[(field.nativeType?.[0] as string | undefined) ?? ''] ?? SCALAR_TYPES[field.type] ?? field.type);
      const actualType = actual.dataType === 'USER-DEFINED' ? `enum ${actual.udtName}` : actual.dataType;
      if (expectedType !== actualType) problems.push(`column ${where}: database type ${actualType}, schema.prisma type ${expectedType}`);
      const precision = field.nativeType?.[1]?.[0];
      if (precision !== undefined && actual.precision !== null && String(actual.precision) !== String(precision)) {
        problems.push(`column ${where}: database precision ${actual.precision}, schema.prisma precision ${precision}`);
      }
      if (field.isRequired === actual.nullable) {
        problems.push(`column ${where}: database ${actual.nullable ? 'nullable' : 'NOT NULL'}, schema.prisma ${field.isRequired ? 'required' : 'optional'}`);
      }
      if (field.hasDefaultValue !== actual.hasDefault) {
        problems.push(
          `column ${where}: database ${actual.hasDefault ? 'has a default' : 'has no default'}, schema.prisma ${field.hasDefaultValue ? 'has a default' : 'has none'}`,
        );
      }
    }
    for (const extra of dbColumns.keys()) problems.push(`column ${table}.${extra}: in database but not in model ${model.name}`);
    byTable.delete(table);

    const keys = keyRows.filter((row) => row.table === table);
    const primary = model.primaryKey?.fields ?? model.fields.filter((f) => f.isId).map((f) => f.name);
    const primaryColumns = primary.map((f) => fieldColumn.get(f) ?? f).join(',');
    const dbPrimary = keys.find((row) => row.kind === 'primary')?.columns.join(',');
    if (primaryColumns !== dbPrimary) problems.push(`table ${table}: primary key (${dbPrimary ?? 'none'}) in database, (${primaryColumns}) in schema.prisma`);
    const uniques = [
      ...model.uniqueFields.map((fields) => fields.map((f) => fieldColumn.get(f) ?? f).join(',')),
      ...model.fields.filter((f) => f.isUnique).map((f) => fieldColumn.get(f.name) ?? f.name),
    ];
    const dbUniques = new Set(keys.filter((row) => row.kind === 'unique').map((row) => row.columns.join(',')));
    for (const unique of uniques) {
      if (!dbUniques.has(unique)) problems.push(`table ${table}: unique (${unique}) in schema.prisma, missing in database`);
      dbUniques.delete(unique);
    }
    for (const unique of dbUniques) problems.push(`table ${table}: unique (${unique}) in database, missing in schema.prisma`);
  }
  for (const table of byTable.keys()) problems.push(`table ${table}: in database but not in schema.prisma`);
  return problems;
}
