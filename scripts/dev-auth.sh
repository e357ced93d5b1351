#!/usr/bin/env bash
# Make a database trust the dev token key of scripts/mint-token.ts (bearer mode):
#   scripts/dev-auth.sh [OWNER_DATABASE_URL]      (default: $DATABASE_URL)
# Runs, as the database owner:
#   select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":[<dev issuer>],"jwks":{<public dev JWKS>}}')
# The audience is not set: the extension then accepts exactly the `resource` the edge passes
# (CHUMBO_PUBLIC_URL), which is the aud that mint-token.ts puts into the tokens.
# Then mint tokens with: deno run -A scripts/mint-token.ts alice   (or bob)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

URL="${1:-${DATABASE_URL:-}}"
[[ -n "$URL" ]] || die "usage: $0 OWNER_DATABASE_URL (or set DATABASE_URL)"
settings="$(deno run -A "$ROOT/scripts/mint-token.ts" settings)"
psql -X -q -v ON_ERROR_STOP=1 -v settings="$settings" "$URL" >/dev/null <<'SQL'
select chumbo.configure(:'settings'::jsonb);
SQL
log "dev-auth: database trusts the dev issuer $(jq -r '.jwt_issuers[0]' <<<"$settings") (kid $(jq -r '.jwks.keys[0].kid' <<<"$settings"))"
