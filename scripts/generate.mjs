// Runs `prisma generate` offline. The Prisma CLI wants a native schema engine
// it would download on first use; `generate` never runs it, so naming any
// existing file in PRISMA_SCHEMA_ENGINE_BINARY lets it proceed in air-gapped
// builds. A real engine path set by the user is kept as is.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY || !existsSync(env.PRISMA_SCHEMA_ENGINE_BINARY)) {
  env.PRISMA_SCHEMA_ENGINE_BINARY = process.execPath;
}
const args = ['prisma', 'generate', ...process.argv.slice(2)];
const result = spawnSync('npx', ['--no-install', ...args], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
