// Authentication, the edge's part of it: the protected-resource metadata (RFC 9728) that tells a
// client where to get a token, and the JWKS courier. Tokens themselves are verified by the database.
import { AUTH_SERVERS, env, MODE, PUBLIC_URL, SCOPES, SUPABASE_URL } from "./config.ts";
import { withConnection } from "./db.ts";
import { json } from "./http.ts";

// JWKS courier: the database verifies tokens, the edge only keeps its copy of the keys current.
// The kid is read from the (unverified) token header just to notice a rotated key early.
const JWKS_URL = env("CHUMBO_JWKS_URL") ?? (SUPABASE_URL && `${SUPABASE_URL}/auth/v1/.well-known/jwks.json`);
const JWKS_MIN_REFRESH_MS = Number(env("CHUMBO_JWKS_MIN_REFRESH_MS") ?? 30000);
let jwks = { kids: new Set<string>(), at: 0, pending: null as Promise<void> | null };

function tokenKid(authorization: string | null): string | null {
  const m = authorization?.match(/^Bearer\s+([\w-]+)\./i);
  try {
    return m ? JSON.parse(atob(m[1].replace(/-/g, "+").replace(/_/g, "/"))).kid ?? null : null;
  } catch {
    return null;
  }
}

export async function refreshJwks(authorization: string | null) {
  if (!JWKS_URL || MODE !== "direct") return;
  const age = Date.now() - jwks.at;
  if (age < JWKS_MIN_REFRESH_MS && age < 3600_000) return; // before reading the kid: the hot path
  const kid = tokenKid(authorization);
  if (age < 3600_000 && (kid === null || jwks.kids.has(kid))) return;
  jwks.pending ??= (async () => {
    try {
      const set = await (await fetch(JWKS_URL)).json();
      await withConnection((db) => db`select chumbo.set_jwks(${db.json(set)}::jsonb)`);
      jwks = { kids: new Set(set.keys.map((k: { kid?: string }) => k.kid)), at: Date.now(), pending: null };
    } catch (e) {
      // Never fatal: the request goes on, and the database judges the token with the keys it has.
      const refused = (e as { code?: string })?.code === "42501";
      console.error(
        refused
          ? "chumbo-edge: the database refused chumbo.set_jwks (grant it: select chumbo.grant_edge('<edge role>', jwks_courier => true))"
          : `chumbo-edge: JWKS refresh from ${JWKS_URL} failed:`,
        refused ? "" : e,
      );
      jwks = { ...jwks, at: Date.now(), pending: null };
    }
  })();
  await jwks.pending;
}

export function protectedResourceMetadata(): Response {
  const meta: Record<string, unknown> = {
    resource: PUBLIC_URL,
    authorization_servers: AUTH_SERVERS,
    bearer_methods_supported: ["header"],
  };
  if (SCOPES.length) meta.scopes_supported = SCOPES;
  return json(200, meta, { "access-control-allow-origin": "*", "cache-control": "public, max-age=300" });
}
