#!/usr/bin/env bash
# (Re)create one database and load it:  scripts/load-db.sh PORT DBNAME [app|conformance] [--edge]
#   app          supabase/compat/roles.sql, supabase/migrations/*.sql (in order), supabase/seed.sql
#   conformance  supabase/compat/roles.sql, tests/conformance/fixtures.sql, auth_mode "public"
#   --edge       also create login role chumbo_edge (stable dev password in .chumbo/edge-password)
#                and run `select chumbo.grant_edge('chumbo_edge')`
# Used by `make run`, the SQL regression runner and any end-to-end suite that needs a database.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PORT="${1:?usage: $0 PORT DBNAME [app|conformance] [--edge]}"
DB="${2:?usage: $0 PORT DBNAME [app|conformance] [--edge]}"
PROFILE="${3:-app}"
EDGE="${4:-}"
q() { psql_at "$PORT" "$DB" "$@"; }

case "$PROFILE" in
  app)         files=("$ROOT"/supabase/migrations/*.sql "$ROOT/supabase/seed.sql") ;;
  conformance) files=("$ROOT/tests/conformance/fixtures.sql" "$ROOT/tests/conformance/fixtures-2026.sql") ;;
  *)           die "unknown profile $PROFILE (app|conformance)" ;;
esac
existing=(); for f in "${files[@]}"; do [[ -f "$f" ]] && existing+=("$f"); done

log "recreate database $DB (port $PORT, profile $PROFILE)"
psql_at "$PORT" postgres -c "drop database if exists \"$DB\" with (force)" -c "create database \"$DB\""

# Supabase's roles and auth schema, for plain Postgres (idempotent; roles are cluster-wide).
if [[ -f "$ROOT/supabase/compat/roles.sql" ]]; then
  q -f "$ROOT/supabase/compat/roles.sql"
else
  warn "supabase/compat/roles.sql missing: anon/authenticated/auth.uid() not created"
fi

# Files may assume the extension exists (fixtures do); migrations must say "if not exists".
q -c 'create extension if not exists chumbo'

((${#existing[@]})) || warn "no SQL to load for profile $PROFILE (${files[*]#$ROOT/})"
for f in "${existing[@]}"; do
  log "load ${f#"$ROOT"/}"
  q -f "$f"
done

has_fn() { [[ "$(q -At -c "select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'chumbo' and p.proname = '$1'")" != 0 ]]; }

if [[ "$PROFILE" == conformance ]]; then
  # The conformance suite talks to the server without tokens.
  if has_fn configure; then q -c "select chumbo.configure('{\"auth_mode\": \"public\"}')" >/dev/null
  else warn "chumbo.configure() missing: auth_mode not set to public"; fi
fi

if [[ "$EDGE" == --edge ]]; then
  PWFILE="$STATE/edge-password"
  [[ -s "$PWFILE" ]] || (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$PWFILE")
  pw="$(cat "$PWFILE")"
  # Never a superuser: the edge gets exactly what chumbo.grant_edge() hands out.
  q -v pw="$pw" <<'SQL'
select format('create role chumbo_edge login password %L', :'pw')
 where not exists (select from pg_roles where rolname = 'chumbo_edge') \gexec
select format('alter role chumbo_edge login nosuperuser password %L', :'pw') \gexec
SQL
  if has_fn grant_edge; then q -c "select chumbo.grant_edge('chumbo_edge')" >/dev/null
  else warn "chumbo.grant_edge() missing: chumbo_edge has no rights yet"; fi
fi
