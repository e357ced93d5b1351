#!/usr/bin/env bash
# SQL regression suite, pg_regress style: tests/regress/sql/NAME.sql is run with psql and its
# output compared with tests/regress/expected/NAME.out. The schedule is the file list in byte
# (LC_COLLATE=C) alphabetical order; no test may depend on another having run.
#   tests/regress/run.sh            run against the test cluster (port $CHUMBO_TEST_PG_PORT, default 54339)
#   tests/regress/run.sh --accept   run, then copy results/*.out over expected/ (review the diff!)
#   tests/regress/run.sh NAME...    run only these tests
# The database chumbo_regress is recreated first, bare: Supabase's roles and auth.* functions
# (supabase/compat/roles.sql), the extension, and tests/regress/helpers.sql (JWT helpers and the
# fixture builders regress.fixture_*). Nothing of the example app: each test builds its own
# fixture inside begin ... rollback (the example app has its own end-to-end tests).
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"

PG_REGRESS="$PG_PKGLIBDIR/pgxs/src/test/regress/pg_regress"
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
pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2 || CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" start

# From template1, with `if not exists`: tests/package/upgrade.sh puts an upgraded chumbo there.
log "recreate database $DB (port $PORT): roles, extension, helpers"
psql_at "$PORT" postgres -c "drop database if exists \"$DB\" with (force)" -c "create database \"$DB\""
psql_at "$PORT" "$DB" -f "$ROOT/supabase/compat/roles.sql"
psql_at "$PORT" "$DB" -c 'create extension if not exists chumbo'
psql_at "$PORT" "$DB" -f "$DIR/helpers.sql"     # regress.hs256(), regress.fixture_*(), shared by the tests
mkdir -p "$DIR/expected"
rm -rf "$DIR/results" "$DIR"/regression.{diffs,out}

# pg_regress aborts the whole run at the first test without an expected file, so: with --accept
# start those from an empty file; otherwise run the others and count the missing ones as failures.
missing=() run=()
for t in "${tests[@]}"; do
  if [[ -f "$DIR/expected/$t.out" ]]; then run+=("$t")
  elif ((accept)); then : > "$DIR/expected/$t.out"; run+=("$t")
  else missing+=("$t"); fi
done

# The tests that open a second backend need contrib's dblink (helpers.sql creates it where there
# is one): without it (the PostgreSQL 16 wheel ships no contrib) they are left out, by name.
no_dblink=()
if [[ "$(psql_at "$PORT" "$DB" -Atc "select count(*) from pg_extension where extname = 'dblink'")" == 0 ]]; then
  kept=()
  for t in ${run[@]+"${run[@]}"}; do
    if grep -q dblink "$DIR/sql/$t.sql"; then no_dblink+=("$t"); else kept+=("$t"); fi
  done
  run=(${kept[@]+"${kept[@]}"})
  ((${#no_dblink[@]} == 0)) \
    || warn "NOT RUN on PostgreSQL $PG_MAJOR (no dblink extension here): ${no_dblink[*]}"
fi

rc=0
if ((${#run[@]})); then
  log "pg_regress: ${#run[@]} test(s) on 127.0.0.1:$PORT/$DB"
  # --use-existing: the database is ours (loaded above), pg_regress must not drop/create it.
  "$PG_REGRESS" --use-existing --bindir="$PG_BIN" --host=127.0.0.1 --port="$PORT" --user=postgres \
    --inputdir="$DIR" --outputdir="$DIR" --dbname="$DB" "${run[@]}" || rc=$?
fi

if ((accept)); then
  for t in "${tests[@]}"; do
    [[ -f "$DIR/results/$t.out" ]] && cp "$DIR/results/$t.out" "$DIR/expected/$t.out"
  done
  log "accepted results into tests/regress/expected/ (review with git diff before committing)"
  exit 0
fi
((${#missing[@]} == 0)) || warn "no expected output for: ${missing[*]} (create it with tests/regress/run.sh --accept ${missing[*]})"
if ((rc)); then
  [[ -s "$DIR/regression.diffs" ]] && cat "$DIR/regression.diffs"
  die "SQL regression tests failed (diffs: tests/regress/regression.diffs)"
fi
((${#missing[@]} == 0)) || die "SQL regression tests without expected output: ${missing[*]}"
((${#no_dblink[@]} == 0)) || warn "passed without ${no_dblink[*]} (no dblink on PostgreSQL $PG_MAJOR)"
