#!/usr/bin/env bash
# The package as a user gets it: `npm pack` the built tree, install the tarball
# into an empty project, and run its CLI there: `runledger migrate` on a fresh
# database, then `runledger dashboard`, whose page and API must answer. Catches
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
echo "package smoke: ${TARBALL} installs; its CLI migrates and serves the dashboard (page, assets, API)"
