//! Deployment settings: one jsonb object in `chumbo.settings`, merged over these defaults.
//! Read as the extension owner (the caller has no access to chumbo's tables) and cached per
//! backend together with the capability registry (same schema version).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// JWT bearer tokens from the configured issuers, advertised via protected-resource metadata.
    Oauth,
    /// JWT bearer tokens, no discovery.
    Bearer,
    /// API keys from `chumbo.create_api_key` (`x-api-key` or `Authorization: Bearer`).
    #[serde(rename = "api-key")]
    ApiKey,
    /// Everyone is `anon`; must be chosen explicitly.
    Public,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Roles capabilities may run as (from the claims' `role`). Superusers and BYPASSRLS roles
    /// are refused whatever this says.
    pub allowed_roles: Vec<String>,
    pub auth_mode: AuthMode,
    /// Accepted `iss` values (exact strings). Required for bearer and oauth modes: with none,
    /// every token is refused.
    pub jwt_issuers: Vec<String>,
    /// Accepted `aud` values. Empty: the canonical resource URL the edge passes.
    pub jwt_audience: Vec<String>,
    /// JSON Web Key Set used to verify ES256/RS256/EdDSA tokens.
    pub jwks: Option<serde_json::Value>,
    /// Verify HS256 tokens with this secret (off unless set).
    pub jwt_hs256_secret: Option<String>,
    /// Upper bound of the serialized result of one call, in bytes.
    pub max_result_bytes: usize,
    /// Upper bound of rows a set-returning capability contributes to one result.
    pub max_rows: usize,
    /// Page size of the list methods.
    pub page_size: usize,
    /// Allowed request body size for chumbo.http, in bytes.
    pub max_body_bytes: usize,
    /// Optional `instructions` sent in the initialize result.
    pub instructions: Option<String>,
    /// Requests per minute per principal (sub + client, API key, or anonymous origin); off when
    /// unset, except in public mode, where it defaults to 600.
    pub rate_limit_per_minute: Option<u32>,
    /// Write one chumbo.audit_events row per request outcome.
    pub audit: bool,
    /// Time bound of one capability call in milliseconds (a tool may set its own with
    /// `@mcp {"timeoutMs": N}`); the session's own statement_timeout still applies if earlier.
    pub call_timeout_ms: u64,
    /// Requests of one principal that may run at once (across all connections); more get HTTP
    /// 429 with Retry-After. 0 turns the limit off.
    pub max_in_flight: u32,
    /// subscriptions/listen streams one principal may hold open at the edge.
    pub max_listen_streams: u32,
    /// Namespaces capability code may use with chumbo.state_get/put/delete (sql/state.sql reads
    /// this key itself); empty: durable state is off.
    pub state_namespaces: Vec<String>,
    /// "schema.function" taking (provider text, provider_sandbox_id text) that
    /// chumbo.sandbox_idle_stop() calls for each idle sandbox.
    pub sandbox_stopper: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allowed_roles: vec!["anon".into(), "authenticated".into()],
            auth_mode: AuthMode::Bearer,
            jwt_issuers: vec![],
            jwt_audience: vec![],
            jwks: None,
            jwt_hs256_secret: None,
            max_result_bytes: 1 << 20,
            max_rows: 1000,
            page_size: 100,
            max_body_bytes: 4 << 20,
            instructions: None,
            rate_limit_per_minute: None,
            audit: true,
            call_timeout_ms: 30_000,
            max_in_flight: 4,
            max_listen_streams: 4,
            state_namespaces: vec![],
            sandbox_stopper: None,
        }
    }
}

impl Settings {
    /// The request-level limit in force.
    pub fn request_limit(&self) -> Option<u32> {
        match (self.rate_limit_per_minute, &self.auth_mode) {
            (Some(n), _) => Some(n),
            (None, AuthMode::Public) => Some(600),
            (None, _) => None,
        }
    }

    pub fn from_json(value: serde_json::Value) -> Result<Settings, String> {
        serde_json::from_value(value).map_err(|e| format!("invalid chumbo settings: {e}"))
    }

    /// The settings as shown to owners: secrets replaced by a marker.
    pub fn redacted(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if self.jwt_hs256_secret.is_some() {
            v["jwt_hs256_secret"] = serde_json::json!("<redacted>");
        }
        v
    }
}
