//! Deployment settings: one jsonb object in `chumbo.settings`, merged over these defaults.
//! Read as the extension owner (the caller has no access to chumbo's tables) and cached per
//! backend together with the capability registry (same schema version).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
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

/// One mode, or several on one endpoint (e.g. `["oauth", "api-key"]`): each credential goes to
/// exactly one verifier, chosen by its shape.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AuthModes {
    One(AuthMode),
    Several(Vec<AuthMode>),
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Roles capabilities may run as (from the claims' `role`). Superusers and BYPASSRLS roles
    /// are refused whatever this says.
    pub allowed_roles: Vec<String>,
    pub auth_mode: AuthModes,
    /// A Supabase project URL (`https://<ref>.supabase.co`); `chumbo.configure` expands it into
    /// the issuer, audience, JWKS location, oauth mode and `require_client_id` (see
    /// [Settings::expand_presets]).
    pub supabase_url: Option<String>,
    /// Refuse tokens without a `client_id` claim: an OAuth client's access token has one, a
    /// session token of the application's own web client does not.
    pub require_client_id: bool,
    /// Where the issuer publishes its JWKS (for the edge's JWKS courier and the remote doctor).
    pub jwks_url: Option<String>,
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
    /// Upper bound of an MCP App's HTML document in bytes (chumbo.create_app, and what a render
    /// function returns); apps bundled with their SDK are 0.5–1.3 MB.
    pub max_app_bytes: usize,
    /// Upper bound of rows a set-returning capability contributes to one result.
    pub max_rows: usize,
    /// Page size of the list methods.
    pub page_size: usize,
    /// Rows in one page of a set-returning tool (a tool may set its own with
    /// `@mcp {"page": {"rows": N}}`); never more than `max_rows`.
    pub page_rows: usize,
    /// Bytes of row JSON in one page of a set-returning tool (`@mcp {"page": {"bytes": N}}`);
    /// never more than half of `max_result_bytes`. A page holds at least one row.
    pub page_bytes: usize,
    /// How long a page cursor stays valid, in seconds.
    pub cursor_ttl_seconds: u64,
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
    // Model-output projection, exactly-once operations, run handles.
    /// "schema.function" taking `(capability text, error jsonb)` and returning `text`, run as the
    /// caller: rephrases or redacts what a failed capability tells the model. `error` holds the
    /// already-redacted `message`, the `sqlstate`, whether the application `authored` it, and the
    /// `trace_id`; null or an error of its own keeps chumbo's message.
    pub error_projection: Option<String>,
    /// How long the stored outcome of an idempotent call answers retries, in seconds.
    pub idempotency_ttl_seconds: u32,
    /// How long a run handle (`_meta` `io.chumbo/run`) stays valid, in seconds.
    pub run_ttl_seconds: u32,
    // Tool policies (src/call/policy.rs).
    /// "schema.function" `() returns text[]`, run as the caller: the caller's scopes, from the
    /// application's own tables, used instead of the token's `scope`/`scp` claims.
    pub scope_resolver: Option<String>,
    /// Expose privileged (SECURITY DEFINER) capabilities owned by a superuser. Each call of one
    /// runs as superuser: every privilege and row-level security are past. Off: they are listed
    /// by chumbo.doctor() as problems and never run.
    pub dangerously_allow_superuser_tools: bool,
    // Durable tasks (src/call/task.rs, src/api/tasks.rs).
    /// Background workers that may run tasks at once in one database (0: none are started, and
    /// `call chumbo.run_tasks()` from a scheduler runs them).
    pub task_workers: u32,
    /// How long a finished task and its result are kept, in milliseconds (the task's `ttlMs`).
    pub task_ttl_ms: u64,
    /// The `pollIntervalMs` tasks suggest to clients.
    pub task_poll_interval_ms: u64,
    /// The longest time bound a task's run may have (a task tool's `timeoutMs` above it is cut
    /// to it), in milliseconds.
    pub task_timeout_ceiling_ms: u64,
    /// Unfinished tasks one principal may have; another call that would become a task is refused.
    pub max_tasks_per_principal: u32,
    /// Messages one 2025-03-26 JSON-RPC batch may hold (each counts as a request in flight and
    /// against the rate limit, like a request of its own).
    pub max_batch_messages: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allowed_roles: vec!["anon".into(), "authenticated".into()],
            auth_mode: AuthModes::One(AuthMode::Bearer),
            supabase_url: None,
            require_client_id: false,
            jwks_url: None,
            jwt_issuers: vec![],
            jwt_audience: vec![],
            jwks: None,
            jwt_hs256_secret: None,
            max_result_bytes: 1 << 20,
            max_app_bytes: 2 << 20,
            max_rows: 1000,
            page_size: 100,
            page_rows: 50,
            page_bytes: 32 << 10,
            cursor_ttl_seconds: 3600,
            max_body_bytes: 4 << 20,
            instructions: None,
            rate_limit_per_minute: None,
            audit: true,
            call_timeout_ms: 30_000,
            max_in_flight: 4,
            max_listen_streams: 4,
            state_namespaces: vec![],
            sandbox_stopper: None,
            error_projection: None,
            idempotency_ttl_seconds: 86_400,
            run_ttl_seconds: 86_400,
            scope_resolver: None,
            dangerously_allow_superuser_tools: false,
            max_batch_messages: 4,
            task_workers: 2,
            task_ttl_ms: 3_600_000,
            task_poll_interval_ms: 1_000,
            task_timeout_ceiling_ms: 3_600_000,
            max_tasks_per_principal: 20,
        }
    }
}

impl Settings {
    /// The modes in force.
    pub fn auth_modes(&self) -> &[AuthMode] {
        match &self.auth_mode {
            AuthModes::One(m) => std::slice::from_ref(m),
            AuthModes::Several(ms) => ms,
        }
    }

    pub fn allows(&self, mode: AuthMode) -> bool {
        self.auth_modes().contains(&mode)
    }

    /// The request-level limit in force.
    pub fn request_limit(&self) -> Option<u32> {
        match self.rate_limit_per_minute {
            Some(n) => Some(n),
            None if self.allows(AuthMode::Public) => Some(600),
            None => None,
        }
    }

    /// What `chumbo.configure(changes)` merges: `changes` plus the keys a preset implies that
    /// `changes` does not set itself. `supabase_url` → Supabase Auth's issuer
    /// (`<url>/auth/v1`), its JWKS, the audience `authenticated` its OAuth access tokens carry,
    /// oauth mode, and `require_client_id` (Supabase issues the same `aud` to the app's own
    /// session tokens, which are not an MCP client's).
    pub fn expand_presets(
        changes: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        use serde_json::json;
        let Some(url) = changes.get("supabase_url").and_then(|u| u.as_str()) else {
            return Ok(changes);
        };
        let base = url.trim_end_matches('/');
        let parsed =
            url::Url::parse(base).map_err(|_| format!("supabase_url is not a URL: {url}"))?;
        if !matches!(parsed.scheme(), "https" | "http") || parsed.host_str().is_none() {
            return Err(format!("supabase_url must be an http(s) URL: {url}"));
        }
        if parsed.path() != "/" && !parsed.path().is_empty() {
            return Err(format!(
                "supabase_url is the project URL without a path (https://<ref>.supabase.co): {url}"
            ));
        }
        let implied = [
            ("supabase_url", json!(base)),
            ("auth_mode", json!("oauth")),
            ("jwt_issuers", json!([format!("{base}/auth/v1")])),
            ("jwt_audience", json!(["authenticated"])),
            (
                "jwks_url",
                json!(format!("{base}/auth/v1/.well-known/jwks.json")),
            ),
            ("require_client_id", json!(true)),
        ];
        let mut out = changes.clone();
        for (k, v) in implied {
            if k == "supabase_url" || !changes.contains_key(k) {
                out.insert(k.to_string(), v);
            }
        }
        Ok(out)
    }

    pub fn from_json(value: serde_json::Value) -> Result<Settings, String> {
        // Read from its text: a number kept as text (serde_json's arbitrary_precision) that does
        // not fit its field says only "invalid number" when read from the value, and from the text
        // it says what was expected. The path names the setting.
        let text = value.to_string();
        let s: Settings =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
                .map_err(|e| {
                    let inner = e.inner();
                    let at = format!(" at line {} column {}", inner.line(), inner.column());
                    let message = inner.to_string();
                    let message = message.strip_suffix(&at).unwrap_or(&message);
                    match e.path().to_string().as_str() {
                        "." => format!("invalid chumbo settings: {message}"),
                        path => format!("invalid chumbo settings: {path}: {message}"),
                    }
                })?;
        if s.auth_modes().is_empty() {
            return Err("invalid chumbo settings: auth_mode must name at least one mode".into());
        }
        if s.call_timeout_ms == 0 {
            return Err("invalid chumbo settings: call_timeout_ms must be at least 1 (every call has a time bound)".into());
        }
        for (name, value) in [
            ("max_app_bytes", s.max_app_bytes as u64),
            ("page_rows", s.page_rows as u64),
            ("page_bytes", s.page_bytes as u64),
            ("cursor_ttl_seconds", s.cursor_ttl_seconds),
        ] {
            if value == 0 {
                return Err(format!(
                    "invalid chumbo settings: {name} must be at least 1"
                ));
            }
        }
        for (name, value) in [
            ("task_ttl_ms", s.task_ttl_ms),
            ("task_poll_interval_ms", s.task_poll_interval_ms),
            ("task_timeout_ceiling_ms", s.task_timeout_ceiling_ms),
            ("max_tasks_per_principal", s.max_tasks_per_principal as u64),
        ] {
            if value == 0 {
                return Err(format!(
                    "invalid chumbo settings: {name} must be at least 1"
                ));
            }
        }
        if s.max_batch_messages == 0 {
            return Err("invalid chumbo settings: max_batch_messages must be at least 1".into());
        }
        if s.idempotency_ttl_seconds == 0 || s.run_ttl_seconds == 0 {
            return Err("invalid chumbo settings: idempotency_ttl_seconds and run_ttl_seconds must be at least 1".into());
        }
        Ok(s)
    }

    /// A bound whose zero would refuse every request, result or row, or page the lists by nothing.
    /// chumbo.configure refuses such a change; settings an earlier release stored with one
    /// still load as they are (a check in [Settings::from_json] would put every stored setting
    /// back to its default, its JWKS too).
    pub fn zero_bound(&self) -> Option<&'static str> {
        [
            ("max_body_bytes", self.max_body_bytes),
            ("max_result_bytes", self.max_result_bytes),
            ("max_rows", self.max_rows),
            ("page_size", self.page_size),
        ]
        .into_iter()
        .find_map(|(name, value)| (value == 0).then_some(name))
    }

    /// The application functions the settings name, by key (chumbo.configure holds them to the
    /// one name rule, src/postgres/app_function.rs).
    pub fn app_function_names(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("error_projection", &self.error_projection),
            ("scope_resolver", &self.scope_resolver),
            ("sandbox_stopper", &self.sandbox_stopper),
        ]
        .into_iter()
        .filter_map(|(key, name)| name.as_deref().map(|n| (key, n)))
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
