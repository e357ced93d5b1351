#!/usr/bin/env bash
# Every released version -> current (Cargo.toml's version), checked by comparison (pgmq-style),
# against a running server on 127.0.0.1:$PGPORT whose extension directory holds every kept
# install script sql/chumbo--X.sql, every upgrade script and the current version's script
# (tests/package/run.sh provides one, installed from the package alone).
#   0. the kept scripts: every version an upgrade script starts from has its install script kept
#      (sql/chumbo--A.sql for each sql/chumbo--A--B.sql), the server offers each of them, and
#      each kept release updated one step dumps like the next kept release
#   a. chumbo_fresh: create extension chumbo (current), a capability, the same settings change,
#      the example app; dumped once
#   b. for each released version X (every kept sql/chumbo--X.sql, oldest first):
#      chumbo_up_X: create extension chumbo version 'X', a capability, then rows in EVERY table X
#      has (settings, API key, deployment keys, rate counters, MRTR nonces, audit events, durable
#      state, sandboxes; from 0.2.0 schema_changes; from 0.3.0 skills and their files and grants,
#      idempotency outcomes and run ids); a table of X left empty fails the test.
#      alter extension chumbo update (to the current version, through every upgrade script);
#      every row of every table X had, in every column X had, is still there and unchanged
#      (schema_changes: its newest number did not go back); the example app; then against
#      chumbo_fresh: the extension's members, pg_dump --schema-only of clones with every member
#      detached (definitions, grants, comments; normalised), pg_init_privs of the members (the
#      grants pg_dump of a database with chumbo starts from), the settings row and
#      chumbo.settings_effective(): any difference fails. The API key made at X answers
#      tools/list through chumbo.http; from 0.3.0 the skill installed at X is listed to it; audit
#      ids go on from where X left them.
#   c. the SQL regression suite against an extension updated from the oldest release
#   d. each release installed in a SQL_ASCII database: the update to the current version refuses
#      it (chumbo needs UTF8) and leaves the release as it was
# Env: PGPORT (required), PG_BIN (pg_dump's directory; default lib.sh's PostgreSQL $PG_MAJOR),
#      UPGRADE_FROM="0.3.0 0.4.0" to check only those releases (default: every kept one),
#      UPGRADE_SKIP_REGRESS=1 to skip the regression run, UPGRADE_KEEP=1 to keep the databases.
set -euo pipefail
PKG_PG_BIN="${PG_BIN:-}"                  # lib.sh sets PG_BIN; an explicit one wins
source "$(dirname "$0")/../../scripts/lib.sh"
: "${PGPORT:?PGPORT: the port of a running server with every kept chumbo version installed}"
PG_BIN="${PKG_PG_BIN:-$PG_BIN}"
TO="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
q() { local db="$1"; shift; psql_at "$PGPORT" "$db" "$@"; }
fail() { printf 'upgrade: FAILED: %s\n' "$*" >&2; exit 1; }
started=$SECONDS

# The released versions: every kept install script but the current version's, oldest first.
mapfile -t RELEASES < <(for f in "$ROOT"/sql/chumbo--*.sql; do
                           v="${f##*/chumbo--}"; v="${v%.sql}"
                           [[ "$v" == *--* || "$v" == "$TO" ]] || echo "$v"
                         done | sort -V)
((${#RELEASES[@]} > 0)) || fail "no kept install script sql/chumbo--X.sql"
read -r -a FROMS <<<"${UPGRADE_FROM:-${RELEASES[*]}}"
extversion() { q "$1" -Atc "select extversion from pg_extension where extname = 'chumbo'"; }

log "0. the kept scripts: ${RELEASES[*]} (and $TO, generated)"
for f in "$ROOT"/sql/chumbo--*--*.sql; do
  a="${f##*/chumbo--}"; a="${a%%--*}"
  [[ -s "$ROOT/sql/chumbo--$a.sql" ]] \
    || fail "${f#"$ROOT"/} starts from $a, whose install script sql/chumbo--$a.sql is not kept (CONTRIBUTING.md, Releasing a version)"
done
for v in "${RELEASES[@]}"; do
  [[ "$(q postgres -Atc "select count(*) from pg_available_extension_versions where name = 'chumbo' and version = '$v'")" == 1 ]] \
    || fail "the server does not offer chumbo $v (is sql/chumbo--$v.sql installed?)"
  [[ "$(q postgres -Atc "select path is not null from pg_extension_update_paths('chumbo') where source = '$v' and target = '$TO'")" == t ]] \
    || fail "no update path from $v to $TO"
done

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
# A capability of our own and a settings change, made in every database (before the update in
# the chumbo_up_X ones).
CAPABILITY="create function mcp.upgrade_probe() returns text language sql stable as \$\$ select 'probe' \$\$;
  comment on function mcp.upgrade_probe() is 'Says probe.';
  revoke execute on function mcp.upgrade_probe() from public; grant execute on function mcp.upgrade_probe() to authenticated;"
SETTINGS="update chumbo.settings set value = value || '{\"auth_mode\": \"api-key\", \"state_namespaces\": [\"preferences\", \"notes\"]}'"

members() {    # DB: every extension member as ALTER EXTENSION can name it
  q "$1" -Atc "select pg_describe_object(classid, objid, objsubid) from pg_depend
                where refclassid = 'pg_extension'::regclass and deptype = 'e'
                  and refobjid = (select oid from pg_extension where extname = 'chumbo') order by 1"
}
init_privs() { # DB: the initial privileges recorded for the extension's members (and their columns)
  q "$1" -Atc "select pg_describe_object(i.classoid, i.objoid, i.objsubid) || ' ' || i.privtype::text || ' '
                      || (select string_agg(a::text, ',' order by a::text) from unnest(i.initprivs) a)
                 from pg_init_privs i
                where exists (select from pg_depend d
                               where d.classid = i.classoid and d.objid = i.objoid and d.deptype = 'e'
                                 and d.refclassid = 'pg_extension'::regclass
                                 and d.refobjid = (select oid from pg_extension where extname = 'chumbo'))
                order by 1"
}
settings_of() { # DB: the settings row and the effective settings (secrets redacted)
  q "$1" -Atc "select jsonb_build_object('row', (select value from chumbo.settings), 'effective', chumbo.settings_effective())"
}
dump() {       # DB OUT: pg_dump --schema-only of a clone with every extension member detached, normalised
  local db="$1" out="$2"
  q postgres -c "drop database if exists \"${db}_dump\" with (force)" -c "create database \"${db}_dump\" template \"$db\""
  # detach every member, so that pg_dump dumps its definition, grants and comments
  q "${db}_dump" <<'SQL'
do $$
declare d text;
begin
  -- (a procedure is described as a "function", which ALTER EXTENSION ... DROP refuses for it)
  for d in select case when classid = 'pg_proc'::regclass
                        and (select prokind from pg_proc where oid = objid) = 'p'
                       then 'procedure ' || objid::regprocedure::text
                       else pg_describe_object(classid, objid, objsubid) end
             from pg_depend
            where refclassid = 'pg_extension'::regclass and deptype = 'e'
              and refobjid = (select oid from pg_extension where extname = 'chumbo')
  loop
    execute 'alter extension chumbo drop ' || d;
  end loop;
end $$;
SQL
  # --schema=chumbo --schema=mcp would miss the event triggers and public's objects: dump it all
  "$PG_BIN/pg_dump" -h 127.0.0.1 -p "$PGPORT" -U postgres --schema-only "${db}_dump" > "$out.raw"
  # normalise: drop comments, blank lines and pg_dump's per-run \restrict key
  grep -v -e '^--' -e '^$' -e '^\\restrict ' -e '^\\unrestrict ' "$out.raw" > "$out"
  q postgres -c "drop database \"${db}_dump\""
  grep -q 'CREATE FUNCTION chumbo.http' "$out" || fail "the dump of $db holds no chumbo functions (members not detached?)"
}
same() {       # WHAT EXPECTED ACTUAL LABEL: diff -u, fail on any difference
  diff -u "$2" "$3" > "$WORK/diff" || { cat "$WORK/diff"; fail "$1 differ (- $4)"; }
}

# 0, continued: each kept release, updated one step, is the next kept release (the kept scripts
# are the releases their upgrade scripts were written against). Schema only: at an old version
# the current library serves nothing, but its scripts install and dump.
for ((i = 0; i + 1 < ${#RELEASES[@]}; i++)); do
  a="${RELEASES[i]}" b="${RELEASES[i + 1]}"
  fresh_db chumbo_step_a "$a"; q chumbo_step_a -c "alter extension chumbo update to '$b'"
  fresh_db chumbo_step_b "$b"
  members chumbo_step_b > "$WORK/m.b"; members chumbo_step_a > "$WORK/m.a"
  same "the members of $a updated to $b and of $b" "$WORK/m.b" "$WORK/m.a" "$b, + $a updated"
  dump chumbo_step_b "$WORK/d.b"; dump chumbo_step_a "$WORK/d.a"
  same "the schemas of $a updated to $b and of $b" "$WORK/d.b" "$WORK/d.a" "$b, + $a updated"
  q postgres -c "drop database chumbo_step_a" -c "drop database chumbo_step_b"
  log "   $a + sql/chumbo--$a--$b.sql dumps like sql/chumbo--$b.sql ($(wc -l < "$WORK/d.b") lines)"
done

log "a. chumbo_fresh: chumbo $TO + the capability + the settings change + the example app"
fresh_db chumbo_fresh
[[ "$(extversion chumbo_fresh)" == "$TO" ]] || fail "a fresh install is not $TO (is chumbo.control's default_version $TO?)"
q chumbo_fresh -c "$CAPABILITY" -c "$SETTINGS"
load_app chumbo_fresh
members chumbo_fresh > "$WORK/members.fresh"
init_privs chumbo_fresh > "$WORK/initprivs.fresh"
settings_of chumbo_fresh > "$WORK/settings.fresh"
dump chumbo_fresh "$WORK/dump.fresh"

# Rows in every table the database's version has, written with plain SQL and chumbo's SQL
# functions only: the library that serves an old version here is the current one (one
# chumbo.so), which needs the current version's objects for anything that reads the capability
# registry (chumbo.configure, chumbo.handle/http, the app's migrations). So the app is loaded
# after the update (in chumbo_fresh too, in the same order).
has_table() { [[ "$(q "$1" -Atc "select to_regclass('chumbo.$2') is not null")" == t ]]; }
write_data() { # DB VERSION (the API key is made by the caller)
  local db="$1" v="$2" run_col='' run_val=''
  q "$db" -c "$SETTINGS"
  if [[ "$(q "$db" -Atc "select count(*) from information_schema.columns
                          where table_schema = 'chumbo' and table_name = 'audit_events' and column_name = 'run_id'")" == 1 ]]; then
    run_col=', run_id' run_val=", 'run-$v'"
  fi
  q "$db" <<SQL
insert into chumbo.state_entries (partition, namespace, key, value, revision, expires_at)
values ('\x01'::bytea, 'preferences', 'theme', '"dark"', 3, null),
       ('\x02'::bytea, 'notes', 'n1', '{"a": 1, "from": "$v"}', 1, now() + interval '1 day');
insert into chumbo.sandboxes (provider, provider_sandbox_id, owner, tenant, idle_seconds)
values ('fake', 'sb-$v', repeat('a', 64), 'acme', 600);
insert into chumbo.audit_events (trace_id, era, method, capability, principal, outcome, duration_ms, bytes, detail$run_col)
values ('t1', 'legacy', 'tools/call', 'upgrade_probe', repeat('b', 64), 'ok', 1.5, 10, '{"x": 1}'$run_val),
       ('t2', 'stateless', 'tools/list', null, repeat('c', 64), 'ok', 0.5, 200, null$run_val);
insert into chumbo.rate_counters (bucket, window_start, window_seconds, hits)
values ('p:' || repeat('d', 64), date_trunc('minute', now()), 60, 7);
insert into chumbo.request_state_uses (nonce, expires_at) values ('nonce-$v', now() + interval '15 minutes');
SQL
  if has_table "$db" skills; then
    # a real archive of tests/regress/data/skills/demo, granted to authenticated, behind a scope
    local tgz="$WORK/demo.tar.gz"
    tar -C "$ROOT/tests/regress/data/skills" -czf "$tgz" demo
    q "$db" -v tgz="$(base64 -w0 "$tgz")" -v sha="$(sha256sum "$tgz" | cut -c1-64)" <<'SQL'
select chumbo.install_skill(decode(:'tgz', 'base64'), :'sha') \g /dev/null
select chumbo.grant_skill('demo', 'authenticated') \g /dev/null
select chumbo.require_skill_scopes('demo', '{skills:read}') \g /dev/null
SQL
  fi
  if has_table "$db" idempotency_outcomes; then
    q "$db" -c "insert into chumbo.idempotency_outcomes (principal, tool, key_digest, args_digest, result, run_id, created_at, expires_at)
                values (repeat('e', 64), 'upgrade_probe', repeat('f', 64), repeat('0', 64),
                        '{\"content\": [{\"type\": \"text\", \"text\": \"probe\"}]}', 'run-$v', now(), now() + interval '1 day')"
  fi
}
# One expression per table of the database as it is now: its rows in the columns it has now,
# as jsonb, ordered. Made before the update and run before and after it, so columns a later
# version adds are left out (they are new, not lost). schema_changes is a counter (it keeps only
# the newest numbers) and is checked on its own.
snapshot_sql() { # DB
  q "$1" -Atc "select 'select jsonb_build_object(' || string_agg(format(
                   '%L, (select coalesce(jsonb_agg(to_jsonb(x) order by to_jsonb(x)::text), ''[]'') from (select %s from chumbo.%I) x)',
                   c.relname, (select string_agg(quote_ident(a.attname), ', ' order by a.attnum) from pg_attribute a
                                where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), c.relname), ', ' order by c.relname) || ')'
                 from pg_class c
                where c.relnamespace = 'chumbo'::regnamespace and c.relkind in ('r', 'p') and c.relname <> 'schema_changes'"
}
newest_change() { q "$1" -Atc "select coalesce(max(version), 0) from chumbo.schema_changes"; }

for FROM in "${FROMS[@]}"; do
  t0=$SECONDS
  UP="chumbo_up_${FROM//./_}"
  log "b. $UP: chumbo $FROM + the capability + rows in every table of $FROM; update to $TO; the app"
  fresh_db "$UP" "$FROM"
  [[ "$(extversion "$UP")" == "$FROM" ]] || fail "$UP is not at $FROM"
  q "$UP" -c "$CAPABILITY"
  key="$(q "$UP" -Atc "select chumbo.create_api_key('authenticated', '{skills:read}', 'upgrade test key $FROM')")"
  write_data "$UP" "$FROM"
  SNAP="$(snapshot_sql "$UP")"
  before="$(q "$UP" -Atc "$SNAP")"
  empty="$(jq -r '[to_entries[] | select(.value | length == 0) | .key] | join(", ")' <<<"$before")"
  [[ -z "$empty" ]] || fail "no rows written into chumbo.{$empty} at $FROM (write_data must fill every table of the version)"
  jq -e --arg v "$FROM" '(.api_keys | length) == 1 and (.state_entries | length) == 2 and (.audit_events | length) == 2
         and (.settings[0].value.auth_mode == "api-key") and ([.keys[].name] | sort) == ["request_state", "state"]
         and ([.sandboxes[].provider_sandbox_id] == ["sb-" + $v])' <<<"$before" >/dev/null \
    || fail "the data written at $FROM is not all there: $before"
  change_before=0; if has_table "$UP" schema_changes; then change_before="$(newest_change "$UP")"; fi
  audit_max="$(q "$UP" -Atc "select max(id) from chumbo.audit_events")"

  q "$UP" -c "alter extension chumbo update"
  [[ "$(extversion "$UP")" == "$TO" ]] || fail "$UP is not at $TO after the update"
  after="$(q "$UP" -Atc "$SNAP")"    # before the app's migrations change the settings
  if [[ "$before" != "$after" ]]; then
    jq -S . <<<"$before" > "$WORK/rows.before"; jq -S . <<<"$after" > "$WORK/rows.after"
    same "chumbo's rows before and after the update from $FROM" "$WORK/rows.before" "$WORK/rows.after" "at $FROM, + after the update"
  fi
  (($(newest_change "$UP") >= change_before)) || fail "chumbo.schema_changes went back in the update from $FROM"
  load_app "$UP"

  members "$UP" > "$WORK/members.up"
  same "the extension's members (fresh $TO, updated from $FROM)" "$WORK/members.fresh" "$WORK/members.up" "fresh $TO, + updated from $FROM"
  init_privs "$UP" > "$WORK/initprivs.up"
  same "the members' initial privileges (pg_init_privs)" "$WORK/initprivs.fresh" "$WORK/initprivs.up" "fresh $TO, + updated from $FROM"
  settings_of "$UP" > "$WORK/settings.up"
  same "the settings" "$WORK/settings.fresh" "$WORK/settings.up" "fresh $TO, + updated from $FROM"
  dump "$UP" "$WORK/dump.up"
  same "the schemas" "$WORK/dump.fresh" "$WORK/dump.up" "fresh $TO, + updated from $FROM"

  http() { # METHOD: a request with the key made at $FROM through chumbo.http
    q "$UP" -Atc "select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
        'headers', jsonb_build_object('x-api-key', '$key', 'mcp-protocol-version', '2025-11-25'),
        'body', jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', '$1')::text))"
  }
  body="$(http tools/list)"
  jq -e '.status == 200 and ([.body.result.tools[].name] | index("upgrade_probe"))' <<<"$body" >/dev/null \
    || fail "the $FROM API key does not work through chumbo.http after the update: $body"
  checked="the $FROM key answers tools/list"
  if jq -e 'has("skills")' <<<"$before" >/dev/null; then
    body="$(http skills/list)"
    jq -e '.status == 200 and ([.body.result.skills[].frontmatter.name] | index("demo"))' <<<"$body" >/dev/null \
      || fail "the skill installed at $FROM is not listed to its grantee after the update: $body"
    checked+=" and lists the skill installed at $FROM"
  fi
  [[ "$(q "$UP" -Atc "select count(*) = count(distinct id) and min(id) filter (where id > $audit_max) is not null
                        from chumbo.audit_events")" == t ]] \
    || fail "audit ids after the update from $FROM do not go on from $audit_max: $(q "$UP" -Atc "select array_agg(id order by id) from chumbo.audit_events")"
  log "   $FROM -> $TO: schema, members, initial privileges and settings as a fresh $TO; every row of $(jq -r 'keys | join(", ")' <<<"$before") survived ($(jq -r '[to_entries[] | "\(.key) \(.value | length)"] | join(", ")' <<<"$before")); $checked ($((SECONDS - t0)) s)"
  [[ "${UPGRADE_KEEP:-}" == 1 ]] || q postgres -c "drop database \"$UP\""
done
[[ "${UPGRADE_KEEP:-}" == 1 ]] || q postgres -c "drop database chumbo_fresh"

if [[ "${UPGRADE_SKIP_REGRESS:-}" != 1 ]]; then
  # The regression suite recreates chumbo_regress from template1 and runs `create extension if
  # not exists chumbo`: with an updated chumbo already in template1 it runs on the update.
  FROM="${FROMS[0]}"
  log "c. regression suite on an updated extension (template1 holds chumbo $FROM updated to $TO)"
  q template1 -f "$ROOT/supabase/compat/roles.sql"
  q template1 -c "create extension chumbo version '$FROM'" -c "alter extension chumbo update to '$TO'"
  ext_oid="$(q template1 -Atc "select oid from pg_extension where extname = 'chumbo'")"
  rc=0; CHUMBO_TEST_PG_PORT="$PGPORT" "$ROOT/tests/regress/run.sh" || rc=$?
  # a database copied from template1 keeps the extension's oid; a fresh create would get another
  [[ "$(q chumbo_regress -Atc "select oid from pg_extension where extname = 'chumbo'")" == "$ext_oid" ]] \
    || { rc=1; warn "chumbo_regress did not get template1's updated extension"; }
  q template1 -c "drop extension chumbo cascade" >/dev/null
  ((rc == 0)) || fail "the regression suite fails on the updated extension"
fi

# A release installed in a database that is not UTF8 (which sql/bootstrap.sql now refuses, and
# tests/regress/sql/bug_non_utf8_database.sql checks): the update says why and changes nothing.
log "d. the update refuses a database that is not UTF8 (SQL_ASCII), from ${FROMS[*]}"
for FROM in "${FROMS[@]}"; do
  ASCII="chumbo_ascii_${FROM//./_}"
  q postgres -c "drop database if exists \"$ASCII\" with (force)" \
    -c "create database \"$ASCII\" encoding 'SQL_ASCII' locale 'C' template template0"
  q "$ASCII" -f "$ROOT/supabase/compat/roles.sql"
  q "$ASCII" -c "create extension chumbo version '$FROM'"
  out="$(q "$ASCII" -c "alter extension chumbo update to '$TO'" 2>&1)" \
    && fail "the update from $FROM went on in a SQL_ASCII database"
  grep -q "chumbo needs a UTF8 database; this one's encoding is SQL_ASCII" <<<"$out" \
    || fail "the update from $FROM in a SQL_ASCII database failed without saying why: $out"
  [[ "$(extversion "$ASCII")" == "$FROM" ]] || fail "the refused update from $FROM left chumbo at $(extversion "$ASCII")"
  q postgres -c "drop database \"$ASCII\""
done
log "upgrade ${FROMS[*]} -> $TO: ok ($((SECONDS - started)) s)"
