#!/usr/bin/env bash
# Runs the README's quickstart SQL block exactly as written, in a fresh database on the test
# cluster, and checks its promise: Alice's tools/call result holds her row and not Bob's.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${PGHOST:=127.0.0.1}" "${PGPORT:=54339}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER

sql=$(awk '/<!-- quickstart:begin -->/{on=1; next} /<!-- quickstart:end -->/{on=0} on' README.md | sed '/^```/d')
[[ -n "$sql" ]] || { echo "quickstart: no quickstart block in README.md" >&2; exit 1; }

# The quickstart relies on the roles `make run` creates cluster-wide.
psql -X -q -v ON_ERROR_STOP=1 -d postgres -f supabase/compat/roles.sql >/dev/null
psql -X -q -d postgres -c 'drop database if exists quickstart' -c 'create database quickstart' >/dev/null
out=$(printf '%s\n' "$sql" | psql -X -q -t -A -v ON_ERROR_STOP=1 -d quickstart)
psql -X -q -d postgres -c 'drop database quickstart' >/dev/null

answer=$(printf '%s\n' "$out" | tail -n 1)
echo "quickstart answered: $answer"
jq -e '.result.structuredContent.rows | length == 1 and .[0].name == "Alice'"'"'s rocket"' <<<"$answer" >/dev/null \
  || { echo "quickstart: expected exactly Alice's row" >&2; exit 1; }
# the text block as the README shows it (the owner's uuid abbreviated there)
jq -e '.result.content[0].text == "{\"id\":1,\"name\":\"Alice'"'"'s rocket\",\"owner\":\"aaaaaaaa-0000-4000-8000-000000000001\",\"status\":\"active\"}\n\nPage of rows 1-1; this is the last page."' <<<"$answer" >/dev/null \
  || { echo "quickstart: expected the text block the README shows" >&2; exit 1; }
if grep -q "Bob" <<<"$answer"; then echo "quickstart: Bob's row leaked" >&2; exit 1; fi
echo "quickstart: ok"
