#!/usr/bin/env bash
# The package as a user gets it: `npm pack` the built tree, install the tarball
# into an empty project, and run its CLI there: `runledger migrate` on a fresh
# database, then `runledger dashboard`, whose page and API must answer; a
# CommonJS host `require()`s the package and runs a job through it (and
# type-checks that require under module nodenext); `worker --handlers x.ts`
# refuses with a coded error until tsx is there, then runs the job. Catches
# what the test suite cannot see from the source tree: the `files` list, the
# exports map, the bin, the bundled dashboard assets, dependencies declared.
# It packs a clean copy of the tree (the files git tracks, no dist/, no
# generated client), as `npm pack` on a fresh clone does, so the `prepack`
# build is what puts dist/ in the package; node_modules is linked, not installed.
# Usage: scripts/package-smoke.sh <postgres admin url>
set -euo pipefail
ADMIN_URL="${1:?postgres admin url}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
DB="runledger_pkg_smoke_$$"
DB_URL="${ADMIN_URL%/*}/${DB}"
PORT=$((20000 + RANDOM % 20000))
DASH_PID=""
cleanup() {
  [ -n "$DASH_PID" ] && kill "$DASH_PID" 2>/dev/null || true
  psql "$ADMIN_URL" -qtAc "DROP DATABASE IF EXISTS ${DB} WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# A fresh clone: the tracked (and new, not ignored) files only, whatever was built here before.
mkdir "$WORK/clone" "$WORK/app"
# (--ignore-failed-read: a tracked file deleted in the work tree is left out, as it would be committed.)
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$WORK/clone"
ln -s "$ROOT/node_modules" "$WORK/clone/node_modules"
[ ! -e "$WORK/clone/dist" ] || { echo "package smoke: the clean copy has a dist/"; exit 1; }
cd "$WORK/clone"
# The prepack build prints to stdout too: all of it goes to a log, and the tarball's name comes from package.json.
TARBALL="$(node -p 'const p = require("./package.json"); `${p.name.replace(/^@/, "").replace("/", "-")}-${p.version}.tgz`')"
npm pack --pack-destination "$WORK" >"$WORK/pack.log" 2>&1 || { echo "package smoke: npm pack failed"; tail -n 30 "$WORK/pack.log"; exit 1; }
[ -f "$WORK/$TARBALL" ] || { echo "package smoke: npm pack wrote no ${TARBALL}"; tail -n 30 "$WORK/pack.log"; exit 1; }
tar -tzf "$WORK/$TARBALL" >"$WORK/contents.txt" # (a listing file: grep -q on a pipe would SIGPIPE tar under pipefail)
grep -qx 'package/dist/cli/main.js' "$WORK/contents.txt" || { echo "package smoke: ${TARBALL} has no dist/cli/main.js (no prepack build?)"; exit 1; }
grep -qx 'package/dist/dashboard/assets/app.js' "$WORK/contents.txt" || { echo "package smoke: ${TARBALL} has no dashboard assets"; exit 1; }
cd "$WORK/app"
npm init -y >/dev/null
npm install --no-audit --no-fund --prefer-offline "../${TARBALL}" >/dev/null 2>"$WORK/install.log" || { cat "$WORK/install.log"; exit 1; }
# The package's own dependencies accept every Node its engines promise: an app installing it sees no EBADENGINE.
if grep -q EBADENGINE "$WORK/install.log"; then echo "package smoke: installing ${TARBALL} warns EBADENGINE on Node $(node --version)"; cat "$WORK/install.log"; exit 1; fi
psql "$ADMIN_URL" -qtAc "CREATE DATABASE ${DB}" >/dev/null

DATABASE_URL="$DB_URL" npx --no-install runledger migrate
DATABASE_URL="$DB_URL" npx --no-install runledger dashboard --port "$PORT" >"$WORK/dashboard.log" 2>&1 &
DASH_PID=$!
for _ in $(seq 1 50); do
  curl -fsS -o /dev/null "http://127.0.0.1:${PORT}/" 2>/dev/null && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:${PORT}/" | grep -q '<script' || { echo "package smoke: the dashboard page did not load"; cat "$WORK/dashboard.log"; exit 1; }
curl -fsS "http://127.0.0.1:${PORT}/assets/app.js" -o /dev/null || { echo "package smoke: app.js missing from the package"; exit 1; }
curl -fsS "http://127.0.0.1:${PORT}/api/overview" | grep -q '"jobs"' || { echo "package smoke: the dashboard API did not answer"; exit 1; }

# A CommonJS host (what `npm init -y` gives, NestJS among them): Node 20.19+/22.12+ require() the ES module
# through the exports' `default` condition; migrate, enqueue, run and read the job back through both entry points.
npm pkg set type=commonjs
cat >host.cjs <<'JS'
'use strict';
const { Pool } = require('pg');
const { z } = require('zod');
const { defineJob, enqueueJob, jobHandle, migrate, noOrganizationScope, poolDb } = require('runledger');
const { runUntilIdle } = require('runledger/testing');

const greet = defineJob('cjs.greet', z.object({ name: z.string() }), async ({ name }) => ({ greeting: `hello ${name}` }));

async function main() {
  await migrate({ connectionString: process.env.DATABASE_URL });
  const pool = new Pool({ connectionString: process.env.DATABASE_URL });
  try {
    const db = poolDb(pool);
    const { jobId } = await enqueueJob(db, greet, { name: 'cjs' });
    const ran = await runUntilIdle(db, [greet]);
    const output = await jobHandle(db, greet, { jobId, scope: noOrganizationScope() }).getResult({ timeoutMs: 10000 });
    if (ran.succeeded !== 1 || output.greeting !== 'hello cjs') throw new Error(`unexpected: ${JSON.stringify({ ran, output })}`);
    console.log(`cjs host: job ${jobId} -> ${JSON.stringify(output)}`);
  } finally {
    await pool.end();
  }
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
JS
DATABASE_URL="$DB_URL" node host.cjs 2>"$WORK/cjs.log" | grep -q '^cjs host: job .* -> {"greeting":"hello cjs"}$' || { echo "package smoke: a CommonJS host could not require() and use the package"; cat "$WORK/cjs.log"; exit 1; }

# The same require() through the compiler, CommonJS output under module nodenext (the root's tsc: the app installs none).
cat >host.cts <<'TS'
import { defineJob, enqueueJob, jobHandle, noOrganizationScope, type PrismaClientLike } from 'runledger';
import { runUntilIdle } from 'runledger/testing';
import { z } from 'zod';

const greet = defineJob('cjs.greet', z.object({ name: z.string() }), async ({ name }) => ({ greeting: `hello ${name}` }));
export async function greetOnce(db: PrismaClientLike): Promise<string> {
  const { jobId } = await enqueueJob(db, greet, { name: 'cjs' });
  await runUntilIdle(db, [greet]);
  return (await jobHandle(db, greet, { jobId, scope: noOrganizationScope() }).getResult()).greeting;
}
TS
cat >tsconfig.json <<'JSON'
{ "compilerOptions": { "module": "nodenext", "moduleResolution": "nodenext", "strict": true, "noEmit": true, "skipLibCheck": true, "types": [] }, "files": ["host.cts"] }
JSON
"$ROOT/node_modules/.bin/tsc" -p tsconfig.json >"$WORK/tsc.log" 2>&1 || { echo "package smoke: host.cts (CommonJS, module nodenext) does not compile against the package"; cat "$WORK/tsc.log"; exit 1; }
# And as NestJS's default tsconfig reads it (module commonjs, moduleResolution node10: `main`, `types`, `typesVersions`),
# with TypeScript 5 (7 has no node10); the docs workspace installs one for TypeDoc.
TSC5="$ROOT/docs/node_modules/typescript/bin/tsc"
[ -x "$TSC5" ] || { echo "package smoke: no TypeScript 5 at ${TSC5} (npm ci installs it for the docs workspace)"; exit 1; }
cp host.cts host-node10.ts
cat >tsconfig.node10.json <<'JSON'
{ "compilerOptions": { "module": "commonjs", "moduleResolution": "node10", "target": "es2022", "strict": true, "noEmit": true, "skipLibCheck": true, "types": [] }, "files": ["host-node10.ts"] }
JSON
"$TSC5" -p tsconfig.node10.json >"$WORK/tsc5.log" 2>&1 || { echo "package smoke: a CommonJS host under moduleResolution node10 does not compile against the package"; cat "$WORK/tsc5.log"; exit 1; }

# `worker --handlers x.ts`: a coded refusal naming the way out while the project has no tsx, the job run once it has.
cat >handlers.ts <<'TS'
import { defineJob } from 'runledger';
import { z } from 'zod';
export const handlers = [defineJob('ts.greet', z.object({ name: z.string() }), async ({ name }: { name: string }) => ({ greeting: `hello ${name}` }))];
TS
set +e
DATABASE_URL="$DB_URL" npx --no-install runledger --json worker --handlers ./handlers.ts --until-idle >/dev/null 2>"$WORK/ts.log"
TS_CODE=$?
set -e
{ [ "$TS_CODE" = 2 ] && grep -q '"code":"cli.typescript_handlers"' "$WORK/ts.log"; } || { echo "package smoke: worker --handlers x.ts without tsx did not refuse with cli.typescript_handlers (exit ${TS_CODE})"; cat "$WORK/ts.log"; exit 1; }
# tsx as the project would install it (linked from the tree's node_modules: the smoke installs nothing from the registry).
ln -s "$ROOT/node_modules/tsx" node_modules/tsx
cat >enqueue-ts.cjs <<'JS'
const { Pool } = require('pg');
const { enqueueJob, poolDb } = require('runledger');
const pool = new Pool({ connectionString: process.env.DATABASE_URL });
enqueueJob(poolDb(pool), { jobType: 'ts.greet', payload: { name: 'ts' } }).finally(() => pool.end());
JS
DATABASE_URL="$DB_URL" node enqueue-ts.cjs
DATABASE_URL="$DB_URL" npx --no-install runledger --json worker --handlers ./handlers.ts --until-idle >"$WORK/ts-run.json" 2>"$WORK/ts.log" || { echo "package smoke: worker --handlers x.ts with tsx installed failed"; cat "$WORK/ts.log"; exit 1; }
[ "$(node -p 'require(process.argv[1]).stats.succeeded' "$WORK/ts-run.json")" = 1 ] || { echo "package smoke: worker --handlers x.ts ran no job"; cat "$WORK/ts-run.json" "$WORK/ts.log"; exit 1; }

echo "package smoke: ${TARBALL} installs; its CLI migrates and serves the dashboard (page, assets, API); a CommonJS host requires and uses it; --handlers x.ts runs through tsx"
