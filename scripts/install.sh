#!/usr/bin/env bash
# Build the extension in release mode and install it into the system PostgreSQL 15
# (/usr/lib/postgresql/15/lib, /usr/share/postgresql/15/extension). Root owns those dirs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
log "cargo pgrx install --release (the first build takes a few minutes)"
cargo pgrx install --release --pg-config "$PG_CONFIG"
# pgrx installs the generated script of this version only: the kept release scripts
# (chumbo--0.1.0.sql) and upgrade scripts come from sql/.
install -m 644 sql/chumbo--*.sql "$("$PG_CONFIG" --sharedir)/extension/"
