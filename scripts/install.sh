#!/usr/bin/env bash
# Build the extension in release mode and install it into the PostgreSQL lib.sh names: the system
# one (/usr/lib/postgresql/$PG_MAJOR/lib, /usr/share/postgresql/$PG_MAJOR/extension; root owns
# those dirs), or the private copy under $CHUMBO_PG_ROOT.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
log "cargo pgrx install --release (the first build takes a few minutes)"
cargo pgrx install --release --pg-config "$PG_CONFIG"
# pgrx installs the generated script of this version only: the kept release scripts
# (chumbo--0.1.0.sql) and upgrade scripts come from sql/.
install -m 644 sql/chumbo--*.sql "$("$PG_CONFIG" --sharedir)/extension/"
