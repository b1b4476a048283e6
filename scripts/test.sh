#!/usr/bin/env bash
# The whole test suite: against SQLite and against PostgreSQL. Each run ends with its 15 slowest
# tests, so a CI log says where the time goes.
#
# The two runs go side by side: much of a run is spent waiting (on real-time audio, SIPp, a
# browser, a server starting), so two of them on two cores take little longer than one. They
# share nothing but the PostgreSQL and Redis servers (each run has its own databases, its own
# temporary directory and Redis keys of its own), and each run is in itself the same serial run
# as before. Tests of audio paced by the wall clock (SIPp, WebRTC: marked realtime) take turns
# across the two runs (tests/conftest.py), so none has less of the machine than it had when the
# runs went one after the other; the PostgreSQL run plays its audio first and the SQLite run
# last, so they seldom have to wait for each other. Each run ends by saying how long they did.
# The SQLite run prints as it goes; the PostgreSQL run's output follows it.
# CALLPLANE_TEST_SERIAL=1 runs them one after the other instead.
#
# PostgreSQL: CALLPLANE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test) names
# a server where the tests may CREATE DATABASE. Without one, the PostgreSQL run is skipped and
# this says so plainly; under CI (CI=true) a missing PostgreSQL or Redis is a failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
export CALLPLANE_TEST_POSTGRES_URL=${CALLPLANE_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
in_ci() { case "${CI:-}" in 1|true|TRUE|yes) return 0 ;; *) return 1 ;; esac; }
serial() { case "${CALLPLANE_TEST_SERIAL:-}" in 1|true|TRUE|yes) return 0 ;; *) return 1 ;; esac; }

postgres_reachable() {
  "$BIN/python" - <<'PY'
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
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/callplane-tests.XXXXXX")
pg_pid=
cleanup() {
  if [ -n "$pg_pid" ] && kill -0 "$pg_pid" 2>/dev/null; then
    kill -INT "$pg_pid" 2>/dev/null || true
    wait "$pg_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# One database's run; its own --basetemp, so two runs never clean up each other's files.
run() {
  local backend=$1
  shift
  CALLPLANE_TEST_DATABASE=$backend "$BIN/pytest" -q --durations=15 \
    --basetemp="$scratch/$backend" "$@"
}

with_postgres=no
if postgres_reachable; then
  with_postgres=yes
elif in_ci; then
  echo "FAILED: PostgreSQL is required under CI" >&2
  exit 1
fi

if [ "$with_postgres" = yes ] && ! serial; then
  # Tests of audio paced by the wall clock (marked realtime) take turns across the two runs.
  export CALLPLANE_TEST_REALTIME_LOCK="$scratch/realtime.lock"
  echo "== tests against PostgreSQL: started alongside the SQLite run, printed after it"
  # Its own cache-less run: the two would write pytest's cache files at the same moment.
  run postgresql -p no:cacheprovider "$@" >"$scratch/postgresql.log" 2>&1 &
  pg_pid=$!
fi

status=0
echo "== tests against SQLite"
run sqlite "$@" || status=$?

if [ -n "$pg_pid" ]; then
  pg_status=0
  wait "$pg_pid" || pg_status=$?
  pg_pid=
  echo "== tests against PostgreSQL"
  cat "$scratch/postgresql.log"
  if [ "$status" -ne 0 ]; then
    echo "FAILED: the SQLite run (exit $status); its output is above the PostgreSQL run's" >&2
  fi
  [ "$status" -ne 0 ] || status=$pg_status
elif [ "$with_postgres" = yes ]; then
  echo "== tests against PostgreSQL"
  run postgresql "$@" || status=$?
else
  echo "PostgreSQL run SKIPPED: no server at $CALLPLANE_TEST_POSTGRES_URL (set CALLPLANE_TEST_POSTGRES_URL to run it)."
fi
exit "$status"
