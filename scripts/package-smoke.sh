#!/usr/bin/env bash
# The package as a user gets it: `npm pack` the built tree, install the tarball
# into an empty project, and run its CLI there: `runledger migrate` on a fresh
# database, then `runledger dashboard`, whose page and API must answer. Catches
# what the test suite cannot see from the source tree: the `files` list, the
# exports map, the bin, the bundled dashboard assets, dependencies declared.
# Usage: scripts/package-smoke.sh <postgres admin url>   (after `npm run build`)
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

cd "$ROOT"
TARBALL="$(npm pack --silent --pack-destination "$WORK")"
cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund --prefer-offline "./${TARBALL}" >/dev/null
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
