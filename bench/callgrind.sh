#!/usr/bin/env bash
# Instructions per call inside PostgreSQL, by callgrind (the method of bench/analysis.md, issue 32,
# session 16): a copy of the cluster `make bench` leaves behind, one backend in single-user mode
# (`postgres --single`; valgrind on a whole postmaster records only the backends' start-up), as
# the edge's login role, N = 20 and N = 220 runs of one bench/pgbench script; a call's cost is
# (Ir(220) − Ir(20)) / 200, so start-up and first-call work (registry build, plans) cancel out.
# Instruction counts do not move with the machine's load, unlike TPS.
#   bench/callgrind.sh [SCRIPT ...]   names in bench/pgbench (default: the do-nothing and one-row
#                                     calls and their like-for-like floors)
# Caveats (both favour the floors a little): single-user mode parses and plans each statement
# (pgbench -M prepared does not), and the audit queue has no worker there, so chumbo writes a
# call's audit row in the call (~60k instructions) where the bench hands it to the worker.
# Environment: CALLGRIND_DB (chumbo_bench). Writes callgrind.out files under .chumbo/callgrind
# (callgrind_annotate reads them).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"

DB="${CALLGRIND_DB:-chumbo_bench}"
SRC="$BASE/bench/data"
DIR="$BASE/callgrind"
OUT="$STATE/callgrind"
SCRIPTS=("$@")
[[ ${#SCRIPTS[@]} -gt 0 ]] || SCRIPTS=(chumbo_call_noop floor_like_call_noop chumbo_call_one floor_like_call_one)

command -v valgrind >/dev/null || die "callgrind: valgrind not found (apt-get install valgrind)"
[[ -f "$SRC/PG_VERSION" ]] || die "callgrind: no bench cluster at $SRC (run make bench first)"
[[ ! -f "$SRC/postmaster.pid" ]] || die "callgrind: the bench cluster is running (make bench stops it when it ends)"
for s in "${SCRIPTS[@]}"; do [[ -f "bench/pgbench/$s.sql" ]] || die "callgrind: no bench/pgbench/$s.sql"; done

log "callgrind: copying the bench cluster to $DIR"
rm -rf "$DIR" "$OUT"; mkdir -p "$DIR" "$OUT"
cp -a "$SRC" "$DIR/data"
chown -R postgres: "$DIR" "$OUT"

# instructions SCRIPT N: total Ir of one single-user backend running the script N times.
instructions() {
  local input="$OUT/$1-$2.sql" file="$OUT/callgrind.out.$1-$2"
  { echo "set role chumbo_edge"; for _ in $(seq "$2"); do tr '\n' ' ' <"bench/pgbench/$1.sql"; echo; done; } >"$input"
  (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$file" \
    "$PG_BIN/postgres" --single -D "$DIR/data" "$DB" <"$input" >"$OUT/$1-$2.out" 2>"$OUT/$1-$2.valgrind")
  # A single-user backend reports a failed statement on stderr (with valgrind's lines) and goes on.
  ! grep -q ' ERROR: ' "$OUT/$1-$2.valgrind" || die "callgrind: $1 failed: $(grep -m1 ' ERROR: ' "$OUT/$1-$2.valgrind")"
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file"
}

printf '%-24s %14s\n' script "Ir per call"
for s in "${SCRIPTS[@]}"; do
  log "callgrind: $s (20 and 220 calls)"
  small="$(instructions "$s" 20)"
  large="$(instructions "$s" 220)"
  printf '%-24s %14s\n' "$s" "$(( (large - small) / 200 ))"
done
