#!/usr/bin/env bash
# The whole test suite: against SQLite, then against PostgreSQL. Each run ends with its 15
# slowest tests, so a CI log says where the time goes.
#
# PostgreSQL: CALLPLANE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test) names
# a server where the tests may CREATE DATABASE. Without one, the PostgreSQL run is skipped and
# this says so plainly; under CI (CI=true) a missing PostgreSQL or Redis is a failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
export CALLPLANE_TEST_POSTGRES_URL=${CALLPLANE_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
in_ci() { case "${CI:-}" in 1|true|TRUE|yes) return 0 ;; *) return 1 ;; esac; }

echo "== tests against SQLite"
CALLPLANE_TEST_DATABASE=sqlite "$BIN/pytest" -q --durations=15 "$@"

if "$BIN/python" - <<'PY'
import asyncio, os, sys
import asyncpg
url = os.environ["CALLPLANE_TEST_POSTGRES_URL"]
async def main():
    conn = await asyncpg.connect(url, timeout=3)
    await conn.close()
try:
    asyncio.run(main())
except Exception as exc:
    print(f"PostgreSQL not reachable at {url}: {exc}", file=sys.stderr)
    sys.exit(1)
PY
then
  echo "== tests against PostgreSQL"
  CALLPLANE_TEST_DATABASE=postgresql "$BIN/pytest" -q --durations=15 "$@"
elif in_ci; then
  echo "FAILED: PostgreSQL is required under CI" >&2
  exit 1
else
  echo "PostgreSQL run SKIPPED: no server at $CALLPLANE_TEST_POSTGRES_URL (set CALLPLANE_TEST_POSTGRES_URL to run it)."
fi
