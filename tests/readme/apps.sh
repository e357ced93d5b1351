#!/usr/bin/env bash
# Runs the README's "MCP Apps" SQL block exactly as written (psql, as the owner, with its own
# :'uri', :'name', :'html', :'tool', :'role' and :'csp'), in a fresh database on the test cluster,
# and checks what it promises: the role's member lists and reads the app (mime type, _meta.ui.csp,
# the HTML), the tool carries _meta.ui; anon neither lists nor reads it (the unknown-URI answer).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${PGHOST:=127.0.0.1}" "${PGPORT:=54339}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER
DB=readme_apps

sql=$(awk '/<!-- apps:begin -->/{on=1; next} /<!-- apps:end -->/{on=0} on' README.md | sed '/^```/d')
[[ -n "$sql" ]] || { echo "readme apps: no apps block in README.md" >&2; exit 1; }

psql -X -q -v ON_ERROR_STOP=1 -d postgres -f supabase/compat/roles.sql >/dev/null
psql -X -q -d postgres -c "drop database if exists $DB" -c "create database $DB" >/dev/null
trap 'psql -X -q -d postgres -c "drop database if exists $DB" >/dev/null' EXIT
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<'SQL'
create extension chumbo;
create table public.todos (id bigint generated always as identity primary key, title text not null);
grant select, insert on public.todos to authenticated;
create function mcp.add_todo(title text) returns jsonb language sql
  as $$ insert into public.todos (title) values (add_todo.title) returning jsonb_build_object('id', id) $$;
comment on function mcp.add_todo(text) is 'Add a todo.';
SQL

html='<!doctype html><html><body><form><input name="title"><button>Add</button></form></body></html>'
printf '%s\n' "$sql" | psql -X -q -v ON_ERROR_STOP=1 -d "$DB" \
  -v uri='ui://todos/form' -v name='Todos' -v html="$html" -v tool='mcp.add_todo(text)' \
  -v role=authenticated -v csp='{"connectDomains": ["https://api.example.com"]}' >/dev/null

rpc() { # rpc CLAIMS METHOD PARAMS
  psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$DB" -v claims="$1" -v method="$2" -v params="$3" <<'SQL'
select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', :'method', 'params', :'params'::jsonb), :'claims'::jsonb);
SQL
}
alice='{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
anon='{"role":"anon"}'
fail() { echo "readme apps: $*" >&2; exit 1; }

rpc "$alice" resources/list '{}' | jq -e '[.result.resources[] | select(.uri == "ui://todos/form" and .mimeType == "text/html;profile=mcp-app" and ._meta.ui.csp.connectDomains == ["https://api.example.com"])] | length == 1' >/dev/null \
  || fail "authenticated does not list the app"
rpc "$alice" resources/read '{"uri":"ui://todos/form"}' | jq -e --arg html "$html" '.result.contents[0].text == $html' >/dev/null \
  || fail "authenticated does not read the HTML as stored"
rpc "$alice" tools/list '{}' | jq -e '.result.tools[] | select(.name == "add_todo") | ._meta.ui.resourceUri == "ui://todos/form" and ._meta["ui/resourceUri"] == "ui://todos/form"' >/dev/null \
  || fail "the tool has no _meta.ui"
rpc "$anon" resources/list '{}' | jq -e '[.result.resources[] | select(.uri | startswith("ui://"))] | length == 0' >/dev/null \
  || fail "anon lists the app"
hidden=$(rpc "$anon" resources/read '{"uri":"ui://todos/form"}' | jq -c '.error | .message |= sub("ui://todos/form"; "<uri>") | del(.data.uri)')
unknown=$(rpc "$anon" resources/read '{"uri":"ui://todos/none"}' | jq -c '.error | .message |= sub("ui://todos/none"; "<uri>") | del(.data.uri)')
[[ "$hidden" == "$unknown" && "$hidden" != null ]] || fail "anon's read of the app ($hidden) differs from an unknown URI ($unknown)"
echo "readme apps: ok"
