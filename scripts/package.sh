#!/usr/bin/env bash
# `make package`: the release build staged as the files PostgreSQL $PG_MAJOR needs, then shipped two ways.
#   target/release/chumbo-pg$PG_MAJOR/usr/...                   cargo pgrx package (release): chumbo.so,
#                                                        chumbo.control, chumbo--VERSION.sql and the
#                                                        kept sql/chumbo--*.sql (every release, upgrades)
#   target/release/chumbo-VERSION-pg$PG_MAJOR-ARCH.tar.gz       that usr/ tree: `tar -xzf ... -C /`
#   target/release/postgresql-$PG_MAJOR-chumbo_VERSION_ARCH.deb the same files (dpkg-deb; Depends: postgresql-$PG_MAJOR)
# Nothing here installs anything; tests/package/run.sh installs from these artifacts alone.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
ARCH="$(dpkg --print-architecture)"
OUT="$ROOT/target/release"
STAGE="$OUT/chumbo-pg$PG_MAJOR"

log "cargo pgrx package (release) -> ${STAGE#"$ROOT"/}"
rm -rf "$STAGE"
cargo pgrx package --pg-config "$PG_CONFIG"
# pgrx stages under pg_config's own paths; a private copy's (CHUMBO_PG_ROOT) start with that root.
if [[ -n "${CHUMBO_PG_ROOT:-}" && -d "$STAGE${CHUMBO_PG_ROOT%/}/usr" ]]; then
  mv "$STAGE${CHUMBO_PG_ROOT%/}/usr" "$OUT/chumbo-usr.tmp"
  rm -rf "$STAGE" && mkdir -p "$STAGE" && mv "$OUT/chumbo-usr.tmp" "$STAGE/usr"
fi
ext="$STAGE/usr/share/postgresql/$PG_MAJOR/extension"
# pgrx copies only upgrade scripts (chumbo--A--B.sql); the kept install scripts of earlier versions
# (sql/chumbo--X.sql, one per release) are what `create extension chumbo version 'X'` needs.
install -m 644 sql/chumbo--*.sql "$ext/"
kept=(); for f in sql/chumbo--*.sql; do kept+=("$ext/${f#sql/}"); done
for f in "$STAGE/usr/lib/postgresql/$PG_MAJOR/lib/chumbo.so" "$ext/chumbo.control" "$ext/chumbo--$VERSION.sql" "${kept[@]}"; do
  [[ -s "$f" ]] || die "package: ${f#"$STAGE"/} is missing from the staged tree"
done
grep -q "default_version = '$VERSION'" "$ext/chumbo.control" || die "package: chumbo.control is not at $VERSION"

TARBALL="$OUT/chumbo-$VERSION-pg$PG_MAJOR-$ARCH.tar.gz"
log "tarball ${TARBALL#"$ROOT"/}"
tar --owner=0 --group=0 --sort=name -czf "$TARBALL" -C "$STAGE" usr

DEB="$OUT/postgresql-$PG_MAJOR-chumbo_${VERSION}_$ARCH.deb"
log "deb ${DEB#"$ROOT"/}"
DEBROOT="$OUT/deb-root"
rm -rf "$DEBROOT" && mkdir -p "$DEBROOT/DEBIAN" && cp -a "$STAGE/usr" "$DEBROOT/"
cat > "$DEBROOT/DEBIAN/control" <<EOF
Package: postgresql-$PG_MAJOR-chumbo
Version: $VERSION
Architecture: $ARCH
Maintainer: chumbo <chumbo@localhost>
Depends: postgresql-$PG_MAJOR
Section: database
Priority: optional
Description: PostgreSQL $PG_MAJOR as an end-user MCP server (chumbo extension)
 Capabilities are SQL functions in schema mcp, run under the caller's RLS.
EOF
dpkg-deb --root-owner-group --build "$DEBROOT" "$DEB" >/dev/null
rm -rf "$DEBROOT"
log "package $VERSION: ${TARBALL#"$ROOT"/}, ${DEB#"$ROOT"/}"
