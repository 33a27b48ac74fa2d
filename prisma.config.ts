import { defineConfig } from 'prisma/config';

// `prisma migrate deploy` reads the URL from here. Point it at the runledger
// schema so the migration history (_prisma_migrations) lands there, apart from
// the host application's own: DATABASE_URL=postgresql://...?schema=runledger
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/runledger?schema=runledger' },
});
