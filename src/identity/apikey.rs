//! API keys: `chumbo_<key id>_<secret>`. The table holds only SHA-256 of the secret; a key stands
//! for a role and scopes, never for a user.

use crate::{identity::session, postgres::spi_read};
use base64::Engine;
use pgrx::prelude::*;
use sha2::{Digest, Sha256};

const PREFIX: &str = "chumbo_";

/// Creates a key and returns it; it cannot be shown again.
#[pg_extern]
fn create_api_key(
    role: Option<&str>,
    scopes: default!(Option<Vec<Option<String>>>, "'{}'"),
    label: default!(Option<&str>, "NULL"),
    expires_at: default!(Option<pgrx::datum::TimestampWithTimeZone>, "NULL"),
) -> String {
    let role = crate::error::required(role, "create_api_key", "role");
    // NULL: no scopes, as '{}'; a NULL scope is refused by name.
    let scopes: Vec<String> = scopes
        .unwrap_or_default()
        .into_iter()
        .map(|s| crate::error::required(s, "create_api_key", "each of scopes"))
        .collect();
    let mut secret = [0u8; 32];
    // SAFETY: pg_strong_random writes exactly secret.len() bytes into the buffer it is given.
    unsafe {
        pgrx::pg_sys::pg_strong_random(secret.as_mut_ptr().cast(), secret.len());
    }
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
    let digest = Sha256::digest(secret.as_bytes()).to_vec();
    // A write, meant to take a transaction id.
    #[allow(clippy::disallowed_methods)]
    let id = Spi::get_one_with_args::<String>(
        "insert into chumbo.api_keys (secret_sha256, role, scopes, label, expires_at)
         values ($1, $2, $3, $4, $5) returning replace(id::text, '-', '')",
        &[
            digest.into(),
            role.into(),
            scopes.into(),
            label.into(),
            expires_at.into(),
        ],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo.create_api_key: could not store the key",
            None,
        )
    });
    format!("{PREFIX}{id}_{secret}")
}

/// Whether a credential has the shape of one of chumbo's keys (a JWT never starts so).
pub fn looks_like_key(credential: &str) -> bool {
    credential.starts_with(PREFIX)
}

/// What a valid API key stands for: a role and scopes, under the key's own id.
pub struct VerifiedKey {
    pub id: String,
    pub role: String,
    pub scopes: Vec<String>,
}

/// The key's id, role and scopes, or why it is refused. Never cached (unlike JWTs, src/identity/auth.rs):
/// a revocation is an update of chumbo.api_keys that moves no version a cache could watch.
pub fn verify(key: &str) -> Result<VerifiedKey, String> {
    let invalid = || "the API key is invalid".to_string();
    let rest = key.strip_prefix(PREFIX).ok_or_else(invalid)?;
    let (id, secret) = rest.split_once('_').ok_or_else(invalid)?;
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid());
    }
    let digest = Sha256::digest(secret.as_bytes()).to_vec();
    let id = id.to_ascii_lowercase();
    let key_id = id.clone();
    // Runs on every API-key request: a read that takes no transaction id (spi_read).
    let row = session::as_owner(move || {
        spi_read::read(
            "select secret_sha256, role, scopes from chumbo.api_keys
              where id = $1::uuid and revoked_at is null
                and (expires_at is null or expires_at > chumbo.now())",
            &[id.as_str().into()],
            |t| t.first().get_three::<Vec<u8>, String, Vec<String>>(),
        )
    });
    match row {
        Ok((Some(stored), Some(role), scopes)) if constant_time_eq(&stored, &digest) => {
            Ok(VerifiedKey {
                id: key_id,
                role,
                scopes: scopes.unwrap_or_default(),
            })
        }
        _ => Err(invalid()),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
