#!/usr/bin/env bash
# The 0.1.0 -> current (Cargo.toml's version) upgrade path, checked by comparison (pgmq-style), against a running server on
# 127.0.0.1:$PGPORT whose extension directory holds chumbo--0.1.0.sql, chumbo--0.2.0.sql and
# chumbo--0.1.0--0.2.0.sql (tests/package/run.sh provides one, installed from the package alone).
#   a. chumbo_up:    create extension chumbo version '0.1.0', a capability, settings, an API key,
#                    state rows; alter extension chumbo update to '0.2.0'; the example app
#   b. chumbo_fresh: create extension chumbo (0.2.0), the same capability, the example app
#   c. both cloned, every extension member detached in the clones (pg_dump never dumps extension
#      members), pg_dump --schema-only of each, normalised: any difference fails
#   d. nothing lost in chumbo_up: settings, state rows, keys, and the key still works through
#      chumbo.http; then the SQL regression suite against an upgraded extension
# Env: PGPORT (required), PG_BIN (pg_dump's directory; default lib.sh's PostgreSQL $PG_MAJOR),
#      UPGRADE_SKIP_REGRESS=1 to skip the regression run.
set -euo pipefail
PKG_PG_BIN="${PG_BIN:-}"                  # lib.sh sets PG_BIN; an explicit one wins
source "$(dirname "$0")/../../scripts/lib.sh"
: "${PGPORT:?PGPORT: the port of a running server with chumbo 0.1.0 and 0.2.0 installed}"
PG_BIN="${PKG_PG_BIN:-$PG_BIN}"
# 0.1.0 -> the current version, through every upgrade script on the way (0.1.0--0.2.0, 0.2.0--0.3.0, 0.3.0--0.4.0)
FROM=0.1.0 TO="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
q() { local db="$1"; shift; psql_at "$PGPORT" "$db" "$@"; }
fail() { printf 'upgrade: FAILED: %s\n' "$*" >&2; exit 1; }

# The example app, the way scripts/load-db.sh loads it, on the extension as it is.
load_app() {   # DB
  for f in "$ROOT"/supabase/migrations/*.sql "$ROOT/supabase/seed.sql"; do q "$1" -f "$f"; done
}
fresh_db() {   # DB [VERSION]: roles.sql + create extension
  q postgres -c "drop database if exists \"$1\" with (force)" -c "create database \"$1\""
  q "$1" -f "$ROOT/supabase/compat/roles.sql"
  # shellcheck disable=SC2016  # in double quotes the single quotes are literal and $2 expands
  q "$1" -c "create extension chumbo${2:+ version '$2'}"
}
# A capability of our own, made in both databases (before the update in chumbo_up).
CAPABILITY="create function mcp.upgrade_probe() returns text language sql stable as \$\$ select 'probe' \$\$;
  comment on function mcp.upgrade_probe() is 'Says probe.';
  revoke execute on function mcp.upgrade_probe() from public; grant execute on function mcp.upgrade_probe() to authenticated;"

# At 0.1.0 the data is written with plain SQL and chumbo.create_api_key only: the library that
# serves a 0.1.0 install here is the current one (one chumbo.so), and it needs 0.2.0's objects
# (chumbo.schema_changes) for anything that reads the capability registry: chumbo.configure,
# chumbo.handle/http and the app's migrations fail at 0.1.0 with it. So the app is loaded after
# the update (in chumbo_fresh too, in the same order).
log "a. chumbo_up: chumbo $FROM + a capability, settings, an API key, state rows; update to $TO; the app"
fresh_db chumbo_up "$FROM"
[[ "$(q chumbo_up -Atc "select extversion from pg_extension where extname = 'chumbo'")" == "$FROM" ]] \
  || fail "chumbo_up is not at $FROM"
q chumbo_up -c "$CAPABILITY"
q chumbo_up -c "update chumbo.settings set value = value || '{\"auth_mode\": \"api-key\", \"state_namespaces\": [\"preferences\", \"notes\"]}'"
key="$(q chumbo_up -Atc "select chumbo.create_api_key('authenticated', '{}', 'upgrade test key')")"
q chumbo_up <<'SQL'
insert into chumbo.state_entries (partition, namespace, key, value, revision, expires_at)
values ('\x01'::bytea, 'preferences', 'theme', '"dark"', 3, null),
       ('\x02'::bytea, 'notes', 'n1', '{"a": 1}', 1, now() + interval '1 day');
insert into chumbo.sandboxes (provider, provider_sandbox_id, owner, tenant, idle_seconds)
values ('fake', 'sb-1', repeat('a', 64), 'acme', 600);
insert into chumbo.audit_events (trace_id, era, method, capability, principal, outcome, duration_ms, bytes, detail)
values ('t1', 'legacy', 'tools/call', 'upgrade_probe', repeat('b', 64), 'ok', 1.5, 10, '{"x": 1}');
SQL
TABLES=(settings api_keys state_entries sandboxes audit_events rate_counters request_state_uses)
snapshot() {   # every row of every table chumbo had at 0.1.0, as text
  local t parts=()
  for t in "${TABLES[@]}"; do
    # columns added after 0.1.0 (audit_events.run_id, 0.3.0) are left out: they are new, not lost
    parts+=("'$t', (select jsonb_agg(to_jsonb(x) - 'run_id' order by (to_jsonb(x) - 'run_id')::text) from chumbo.$t x)")
  done
  q chumbo_up -Atc "select jsonb_build_object($(IFS=,; echo "${parts[*]}"))"
}
before="$(snapshot)"
jq -e '(.state_entries | length) == 2 and (.api_keys | length) == 1 and (.sandboxes | length) == 1
       and (.audit_events | length) == 1 and (.settings[0].value.auth_mode == "api-key")' <<<"$before" >/dev/null \
  || fail "the data written at $FROM is not all there: $before"
q chumbo_up -c "alter extension chumbo update to '$TO'"
[[ "$(q chumbo_up -Atc "select extversion from pg_extension where extname = 'chumbo'")" == "$TO" ]] \
  || fail "chumbo_up is not at $TO after the update"

after="$(snapshot)"    # before the app's migrations change the settings
load_app chumbo_up

log "b. chumbo_fresh: chumbo $TO + the same capability + the example app"
fresh_db chumbo_fresh
q chumbo_fresh -c "$CAPABILITY"
load_app chumbo_fresh
[[ "$(q chumbo_fresh -Atc "select extversion from pg_extension where extname = 'chumbo'")" == "$TO" ]] \
  || fail "a fresh install is not $TO (is chumbo.control's default_version $TO?)"

log "c. compare the schemas (extension members detached in clones, then pg_dump --schema-only)"
members() {    # DB: every extension member as ALTER EXTENSION can name it
  q "$1" -Atc "select pg_describe_object(classid, objid, objsubid) from pg_depend
                where refclassid = 'pg_extension'::regclass and deptype = 'e'
                  and refobjid = (select oid from pg_extension where extname = 'chumbo') order by 1"
}
members chumbo_up > "$WORK/members.up"; members chumbo_fresh > "$WORK/members.fresh"
diff -u "$WORK/members.fresh" "$WORK/members.up" > "$WORK/members.diff" \
  || { cat "$WORK/members.diff"; fail "the extension's members differ (- fresh $TO, + upgraded)"; }
for db in up fresh; do
  q postgres -c "drop database if exists chumbo_${db}_dump with (force)" \
             -c "create database chumbo_${db}_dump template chumbo_$db"
  # detach every member, so that pg_dump dumps its definition, grants and comments
  q "chumbo_${db}_dump" <<'SQL'
do $$
declare d text;
begin
  for d in select pg_describe_object(classid, objid, objsubid) from pg_depend
            where refclassid = 'pg_extension'::regclass and deptype = 'e'
              and refobjid = (select oid from pg_extension where extname = 'chumbo')
  loop
    execute 'alter extension chumbo drop ' || d;
  end loop;
end $$;
SQL
  # --schema=chumbo --schema=mcp would miss the event triggers and public's objects: dump it all
  "$PG_BIN/pg_dump" -h 127.0.0.1 -p "$PGPORT" -U postgres --schema-only "chumbo_${db}_dump" > "$WORK/dump.$db.raw"
  # normalise: drop comments, blank lines and pg_dump's per-run \restrict key
  grep -v -e '^--' -e '^$' -e '^\\restrict ' -e '^\\unrestrict ' "$WORK/dump.$db.raw" > "$WORK/dump.$db"
  q postgres -c "drop database chumbo_${db}_dump"
done
grep -q 'CREATE FUNCTION chumbo.http' "$WORK/dump.fresh" || fail "the dump holds no chumbo functions (members not detached?)"
if ! diff -u "$WORK/dump.fresh" "$WORK/dump.up" > "$WORK/dump.diff"; then
  cat "$WORK/dump.diff"
  fail "the upgraded schema differs from a fresh $TO install (- fresh, + upgraded)"
fi
log "schemas identical ($(wc -l < "$WORK/dump.fresh") normalised lines, $(wc -l < "$WORK/members.up") members)"

log "d. nothing lost"
[[ "$before" == "$after" ]] || fail "rows changed in the update:
before: $before
after:  $after"
body="$(q chumbo_up -Atc "select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('x-api-key', '$key', 'mcp-protocol-version', '2025-11-25'),
    'body', '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}'))")"
jq -e '.status == 200 and ([.body.result.tools[].name] | index("upgrade_probe"))' <<<"$body" >/dev/null \
  || fail "the $FROM API key does not work through chumbo.http after the update: $body"
log "every row of settings, api_keys, state_entries, sandboxes, audit_events survived; the $FROM key answers tools/list"

if [[ "${UPGRADE_SKIP_REGRESS:-}" != 1 ]]; then
  # The regression suite recreates chumbo_regress from template1 and runs `create extension if
  # not exists chumbo`: with an upgraded chumbo already in template1 it runs on the upgrade.
  log "regression suite on an upgraded extension (template1 holds chumbo $FROM updated to $TO)"
  q template1 -f "$ROOT/supabase/compat/roles.sql"
  q template1 -c "create extension chumbo version '$FROM'" -c "alter extension chumbo update to '$TO'"
  ext_oid="$(q template1 -Atc "select oid from pg_extension where extname = 'chumbo'")"
  rc=0; CHUMBO_TEST_PG_PORT="$PGPORT" "$ROOT/tests/regress/run.sh" || rc=$?
  # a database copied from template1 keeps the extension's oid; a fresh create would get another
  [[ "$(q chumbo_regress -Atc "select oid from pg_extension where extname = 'chumbo'")" == "$ext_oid" ]] \
    || { rc=1; warn "chumbo_regress did not get template1's updated extension"; }
  q template1 -c "drop extension chumbo cascade" >/dev/null
  ((rc == 0)) || fail "the regression suite fails on the upgraded extension"
fi
log "upgrade $FROM -> $TO: ok"
