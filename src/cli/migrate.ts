#!/usr/bin/env node
/** `npm run db:migrate`: applies runledger's migrations to DATABASE_URL. */
import { migrate } from '../migrate/migrate.js';
import { isRunledgerError } from '../errors/runledger-error.js';

const connectionString = process.env.DATABASE_URL;
if (!connectionString) {
  console.error('DATABASE_URL is not set. Example: DATABASE_URL=postgresql://user@host:5432/app npm run db:migrate');
  process.exit(2);
}
try {
  const result = await migrate({ connectionString, log: (line) => console.log(line) });
  console.log(`runledger migrations: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied`);
} catch (error) {
  if (isRunledgerError(error)) {
    console.error(`${error.code}: ${error.message}\n${error.internalMessage}`);
  } else {
    console.error(error);
  }
  process.exit(1);
}
