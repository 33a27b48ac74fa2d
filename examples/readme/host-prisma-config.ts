// prisma.config.ts, at your project's root: where the Prisma CLI finds your schema, migrations and database.
import { defineConfig, env } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' }, // your migrations; runledger's ship in its package
  datasource: { url: env('DATABASE_URL') },
});
