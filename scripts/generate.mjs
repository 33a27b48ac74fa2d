// Runs `prisma generate` offline for runledger's schema and for the host-app
// fixture used by the tests. The Prisma CLI wants a native schema engine that
// it downloads on first use; `generate` never runs it, so naming any existing
// file in PRISMA_SCHEMA_ENGINE_BINARY lets it proceed in air-gapped builds.
// A real engine path set by the user is kept as is.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY || !existsSync(env.PRISMA_SCHEMA_ENGINE_BINARY)) {
  env.PRISMA_SCHEMA_ENGINE_BINARY = process.execPath;
}
const schemas = ['prisma/schema.prisma', ...(existsSync('test/fixtures/host-app/schema.prisma') ? ['test/fixtures/host-app/schema.prisma'] : [])];
for (const schema of schemas) {
  const result = spawnSync('npx', ['--no-install', 'prisma', 'generate', '--schema', schema], { stdio: ['ignore', 'pipe', 'pipe'], env });
  if (result.status !== 0) {
    process.stdout.write(result.stdout ?? '');
    process.stderr.write(result.stderr ?? '');
    process.exit(result.status ?? 1);
  }
  console.log(`generated Prisma client for ${schema}`);
}
