#!/usr/bin/env bash
# Isolation specs (pg_isolation_regress + isolationtester, pgmq's test/specs as the model):
# tests/isolation/specs/NAME.spec interleaves the steps of several sessions in the orders its
# permutations name, and the output (results, errors, which step waited for which) is compared
# with tests/isolation/expected/NAME.out. Deterministic: a step that blocks on a lock is seen as
# waiting (no sleeps, no timing); time is pinned with chumbo.pinned_now.
#   tests/isolation/run.sh            all specs, in sorted order
#   tests/isolation/run.sh NAME...    only these
#   tests/isolation/run.sh --accept   run, then copy results/*.out over expected/ (review the diff!)
# Connection: PGHOST/PGPORT/PGUSER (a superuser; default 127.0.0.1, the test cluster's port,
# postgres), like the other suites under scripts/test.sh. The database chumbo_isolation is
# recreated with the extension, Supabase's request roles (supabase/compat/roles.sql) and
# fixture.sql, not the example app: each spec's setup creates what it needs.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"

ISOLATION_REGRESS="$PG_PKGLIBDIR/pgxs/src/test/isolation/pg_isolation_regress"
DIR="$ROOT/tests/isolation"
HOST="${PGHOST:-127.0.0.1}" PORT="${PGPORT:-$TEST_PORT}" USER_="${PGUSER:-postgres}"
DB=chumbo_isolation
[[ -x "$ISOLATION_REGRESS" ]] || die "pg_isolation_regress not found at $ISOLATION_REGRESS (Debian: postgresql-client-$PG_MAJOR)"

accept=0; tests=()
for a in "$@"; do
  case "$a" in
    --accept) accept=1 ;;
    -*)       die "unknown option $a" ;;
    *)        tests+=("$(basename "$a" .spec)") ;;
  esac
done
if ((${#tests[@]} == 0)); then
  shopt -s nullglob; LC_COLLATE=C
  for f in "$DIR"/specs/*.spec; do tests+=("$(basename "$f" .spec)"); done
fi
((${#tests[@]})) || die "no specs in tests/isolation/specs/"

q() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PORT" -U "$USER_" "$@"; }
q -d postgres -c "select 1" >/dev/null || die "cannot connect to $HOST:$PORT as $USER_"
log "recreate database $DB ($HOST:$PORT)"
q -d postgres -c "drop database if exists $DB with (force)" -c "create database $DB"
q -d "$DB" -f "$ROOT/supabase/compat/roles.sql"
q -d "$DB" -c "create extension chumbo" -f "$DIR/fixture.sql"

rm -rf "$DIR/results" "$DIR"/{output_iso,regression.diffs,regression.out}
missing=() run=()
for t in "${tests[@]}"; do
  [[ -f "$DIR/specs/$t.spec" ]] || die "no spec tests/isolation/specs/$t.spec"
  if [[ -f "$DIR/expected/$t.out" ]]; then run+=("$t")
  elif ((accept)); then : > "$DIR/expected/$t.out"; run+=("$t")
  else missing+=("$t"); fi
done

rc=0
if ((${#run[@]})); then
  log "pg_isolation_regress: ${#run[@]} spec(s) on $HOST:$PORT/$DB"
  # --use-existing: the database is ours (made above); it must not be dropped or created.
  "$ISOLATION_REGRESS" --use-existing --bindir="$PG_BIN" --host="$HOST" --port="$PORT" --user="$USER_" \
    --inputdir="$DIR" --outputdir="$DIR" --dbname="$DB" "${run[@]}" || rc=$?
fi

if ((accept)); then
  for t in "${tests[@]}"; do
    [[ -f "$DIR/results/$t.out" ]] && cp "$DIR/results/$t.out" "$DIR/expected/$t.out"
  done
  log "accepted results into tests/isolation/expected/ (review with git diff before committing)"
  exit 0
fi
((${#missing[@]} == 0)) || warn "no expected output for: ${missing[*]} (create it with tests/isolation/run.sh --accept ${missing[*]})"
if ((rc)); then
  [[ -s "$DIR/regression.diffs" ]] && cat "$DIR/regression.diffs"
  die "isolation specs failed (diffs: tests/isolation/regression.diffs)"
fi
((${#missing[@]} == 0)) || die "isolation specs without expected output: ${missing[*]}"
