//! The application's own functions that metadata and settings name (`visible`, `can_execute`,
//! `approval`, `scope_resolver`, `text` renderers, `model_output` and `error_projection`,
//! completion functions): one name rule and one resolver for all of them.
//!
//! A name is `schema.function` in plain identifiers, never an expression. It is looked up in the
//! catalog as whoever runs the lookup (the caller inside a call, so a function in a schema only
//! the caller may use is found and one they may not use is not; the owner when the registry is
//! built), and only the catalog's own quoted name ever reaches SQL text.

use pgrx::prelude::*;

/// A function found in the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct AppFunction {
    /// `schema.function`, each part quoted by the catalog (`quote_ident`).
    pub qualified: String,
    /// Its return type as `format_type` writes it (`boolean`, `text[]`, `jsonb`).
    pub returns: String,
    pub returns_set: bool,
    /// It lives in schema `mcp`, where it would be exposed as a capability of its own.
    pub in_mcp: bool,
}

/// `schema.function` with plain identifiers (a letter or `_` first, then letters, digits, `_`
/// or `$`; at most 63 bytes each, PostgreSQL's limit).
pub fn valid_name(name: &str) -> bool {
    let ident = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    matches!(name.split_once('.'), Some((s, f)) if ident(s) && ident(f))
}

/// The function `name` taking `args` (a list of type names, e.g. `jsonb` or `text, jsonb`), as the
/// current user sees the catalog; `None` when the name breaks the rule or no such function is
/// visible.
pub fn resolve(name: &str, args: &str) -> Result<Option<AppFunction>, pgrx::spi::Error> {
    if !valid_name(name) {
        return Ok(None);
    }
    Spi::connect(|c| {
        let row = c
            .select(
                "select pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname),
                        pg_catalog.format_type(p.prorettype, null), p.proretset, n.nspname = 'mcp'
                   from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
                  where p.oid = pg_catalog.to_regprocedure($1)",
                Some(1),
                &[format!("{name}({args})").into()],
            )?
            .first();
        if row.is_empty() {
            return Ok(None);
        }
        Ok(Some(AppFunction {
            qualified: row.get::<String>(1)?.unwrap_or_default(),
            returns: row.get::<String>(2)?.unwrap_or_default(),
            returns_set: row.get::<bool>(3)?.unwrap_or(false),
            in_mcp: row.get::<bool>(4)?.unwrap_or(false),
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn one_name_rule() {
        for ok in ["app.counts", "_p.f$1", "private.is_member"] {
            assert!(valid_name(ok), "{ok}");
        }
        let long = format!("app.{}", "f".repeat(64));
        for bad in [
            "counts",
            "app.counts(jsonb)",
            "app.\"x\"",
            "1app.f",
            "app.$f",
            "a.b.c",
            "app.",
            ".f",
            "app.f; drop table t",
            long.as_str(),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
