// Stands in for a host app's generated Prisma client (`prisma generate` with the
// `prisma-client` generator, output ./generated/prisma), so the README's
// examples compile against a real one: the test fixture's (model Order).
export * from '../../../../test/fixtures/host-app/generated/client.js';
