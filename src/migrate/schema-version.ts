/**
 * The schema this package's code needs: its newest packaged migration. A
 * database whose runledger history records it (finished, not rolled back)
 * has every older one too, since migrations apply in order; a newer package
 * may have added more, which this code does not read. Kept as a constant, not
 * read from prisma/migrations at run time, so a bundled host that does not
 * ship that folder still checks; test/unit/schema-version.test.ts keeps it
 * equal to the newest folder.
 */
export const REQUIRED_MIGRATION = '20270101000006_concurrency_seats';
