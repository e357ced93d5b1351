#!/usr/bin/env bash
# SQL regression suite, pg_regress style: tests/regress/sql/NAME.sql is run with psql and its
# output compared with tests/regress/expected/NAME.out. The schedule is the sorted file list.
#   tests/regress/run.sh            run against the test cluster (port $CHUMBO_TEST_PG_PORT, 54339)
#   tests/regress/run.sh --accept   run, then copy results/*.out over expected/ (review the diff!)
#   tests/regress/run.sh NAME...    run only these tests
# The database chumbo_regress is recreated first with the example app (roles.sql, migrations,
# seed), the same way `make run` loads chumbo_dev; the conformance fixtures are not loaded.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"

PG_REGRESS=/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress
DIR="$ROOT/tests/regress"
PORT="$TEST_PORT"
DB=chumbo_regress

accept=0; tests=()
for a in "$@"; do
  case "$a" in
    --accept) accept=1 ;;
    -*)       die "unknown option $a" ;;
    *)        tests+=("$(basename "$a" .sql)") ;;
  esac
done
if ((${#tests[@]} == 0)); then
  shopt -s nullglob; LC_COLLATE=C    # byte order, whatever the locale
  for f in "$DIR"/sql/*.sql; do tests+=("$(basename "$f" .sql)"); done
fi
((${#tests[@]})) || die "no tests in tests/regress/sql/"

# Standalone use: bring up the throwaway test cluster if nothing answers on its port.
pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2 || CHUMBO_CLUSTER=test "$ROOT/scripts/cluster.sh" start

"$ROOT/scripts/load-db.sh" "$PORT" "$DB" app
mkdir -p "$DIR/expected"
rm -rf "$DIR/results" "$DIR"/regression.{diffs,out}

log "pg_regress: ${#tests[@]} test(s) on 127.0.0.1:$PORT/$DB"
rc=0
# --use-existing: the database is ours (loaded above), pg_regress must not drop/create it.
"$PG_REGRESS" --use-existing --bindir="$PG_BIN" --host=127.0.0.1 --port="$PORT" --user=postgres \
  --inputdir="$DIR" --outputdir="$DIR" --dbname="$DB" "${tests[@]}" || rc=$?

if ((accept)); then
  for t in "${tests[@]}"; do
    [[ -f "$DIR/results/$t.out" ]] && cp "$DIR/results/$t.out" "$DIR/expected/$t.out"
  done
  log "accepted results into tests/regress/expected/ (review with git diff before committing)"
  exit 0
fi
if ((rc)); then
  [[ -f "$DIR/regression.diffs" ]] && cat "$DIR/regression.diffs"
  die "SQL regression tests failed (diffs: tests/regress/regression.diffs)"
fi
