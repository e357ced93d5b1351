// The edge's configuration, read once from the environment (the variables are listed and explained
// in index.ts's header), and the URL paths it answers at, which follow from it.
export const env = (name: string) => Deno.env.get(name)?.trim() || undefined;
export const list = (v?: string) => (v ?? "").split(",").map((s) => s.trim()).filter(Boolean);

export const PORT = Number(env("CHUMBO_PORT") ?? 54321);
export const SUPABASE_URL = env("SUPABASE_URL")?.replace(/\/+$/, "");
export const PUBLIC_URL = (env("CHUMBO_PUBLIC_URL") ?? `http://localhost:${PORT}/functions/v1/mcp`).replace(/\/+$/, "");
export const PUBLIC = new URL(PUBLIC_URL);
export const PRM_URL = env("CHUMBO_RESOURCE_METADATA_URL") ?? `${PUBLIC_URL}/.well-known/oauth-protected-resource`;
export const AUTH_SERVERS = list(env("CHUMBO_AUTHORIZATION_SERVERS") ?? (SUPABASE_URL && `${SUPABASE_URL}/auth/v1`));
export const SCOPES = list(env("CHUMBO_SCOPES_SUPPORTED"));
export const ALLOWED_HOSTS = new Set(
  list(env("CHUMBO_ALLOWED_HOSTS") ?? `localhost,127.0.0.1,[::1],${PUBLIC.hostname}`).map((h) => h.toLowerCase()),
);
/** An origin in its serialized form (lowercase scheme and host, default port dropped), or null. */
export function canonicalOrigin(origin: string): string | null {
  try {
    const o = new URL(origin).origin;
    return o === "null" ? null : o;
  } catch {
    return null;
  }
}
export const ANY_ORIGIN = list(env("CHUMBO_ALLOWED_ORIGINS")).includes("*");
export const ALLOWED_ORIGINS = new Set([PUBLIC.origin, ...list(env("CHUMBO_ALLOWED_ORIGINS")).map(canonicalOrigin)]);
export const MAX_BODY = Number(env("CHUMBO_MAX_BODY_BYTES") ?? 4 * 1024 * 1024);
export const BODY_TIMEOUT_MS = Number(env("CHUMBO_BODY_TIMEOUT_MS") ?? 10000);
export const MODE = env("CHUMBO_MODE") ?? "direct";
export const KEEPALIVE_MS = Number(env("CHUMBO_KEEPALIVE_MS") ?? 15000);
export const CLIENT_IP_HEADER = env("CHUMBO_CLIENT_IP_HEADER")?.toLowerCase();
/** Tracing (otel.ts, trace.ts) is on when an OTLP endpoint is configured for traces or metrics and
 * the SDK is not disabled (OTEL_SDK_DISABLED=true), as every OpenTelemetry SDK decides. */
export const TRACING = env("OTEL_SDK_DISABLED")?.toLowerCase() !== "true" &&
  !!(env("OTEL_EXPORTER_OTLP_ENDPOINT") || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ||
    env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"));

// The function answers at /functions/v1/mcp (local dev, the URL clients use) and at /mcp (what
// the Supabase gateway hands the function after stripping /functions/v1).
export const MCP_PATHS = new Set([PUBLIC.pathname, "/functions/v1/mcp", "/mcp"]);
// Protected-resource metadata names ONE resource, CHUMBO_PUBLIC_URL. RFC 9728 §3.3: metadata
// fetched from a well-known URL must name the resource that URL was derived from, so the
// path-inserted form exists only for the public URL's path, and the root form only when the MCP
// URL is the origin itself. The function-local form (…/mcp/.well-known/…) is what 401 challenges
// point to (resource_metadata), the one the Supabase gateway routes to the function.
const WELL_KNOWN = "/.well-known/oauth-protected-resource";
export const PRM_PATHS = new Set([
  PUBLIC.pathname === "/" ? WELL_KNOWN : WELL_KNOWN + PUBLIC.pathname,
  ...[...MCP_PATHS].map((p) => p.replace(/\/$/, "") + WELL_KNOWN),
]);
