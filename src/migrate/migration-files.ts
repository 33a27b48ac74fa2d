/** Reading migrations laid out as Prisma lays them out: `<dir>/<name>/migration.sql`. */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export interface MigrationFile {
  name: string;
  sql: string;
  /** Lowercase hex sha256 of the file bytes, as Prisma records it. */
  checksum: string;
  /** Checksums Prisma also accepts: the same script with LF and CRLF swapped. */
  acceptedChecksums: ReadonlySet<string>;
}

/** The migrations shipped in this package (`prisma/migrations`, two levels above this module in src/ and dist/). */
export const PACKAGED_MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export async function readMigrationFiles(dir: string = PACKAGED_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const files: MigrationFile[] = [];
  for (const name of names) {
    let bytes: Buffer;
    try {
      bytes = await readFile(path.join(dir, name, 'migration.sql'));
    } catch {
      continue; // Prisma ignores folders without a migration.sql as well.
    }
    const text = bytes.toString('utf8');
    const lf = text.replace(/\r\n/g, '\n');
    const crlf = lf.replace(/\n/g, '\r\n');
    files.push({
      name,
      sql: text,
      checksum: sha256Hex(bytes),
      acceptedChecksums: new Set([sha256Hex(bytes), sha256Hex(lf), sha256Hex(crlf)]),
    });
  }
  return files;
}
