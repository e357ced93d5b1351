//! The MCP revisions chumbo speaks, as types: every era decision is a method here, so a new
//! revision is one variant (and the methods that change with it), not string comparisons spread
//! over the request path.

use serde_json::Value;

/// What a stateless request declared about itself (its version is [STATELESS]: the only one),
/// read by protocol::stateless.
#[derive(Clone, Debug)]
pub struct Envelope {
    pub client_capabilities: Value,
    pub log_level: Option<String>,
}

pub const SERVER_NAME: &str = "chumbo";
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The legacy revisions (negotiated by `initialize` or named by the MCP-Protocol-Version header),
/// oldest first: the order is the protocol's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Revision {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
}

impl Revision {
    /// Newest first: the order `initialize` and `server/discover` offer them in.
    pub const ALL: [Revision; 4] = [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ];
    pub const NEWEST: Revision = Revision::V2025_11_25;
    /// What a legacy HTTP request without an MCP-Protocol-Version header is (the spec says so).
    pub const HTTP_DEFAULT: Revision = Revision::V2025_03_26;

    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
        }
    }

    pub fn parse(v: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == v)
    }

    /// JSON-RPC batches existed in 2025-03-26 only.
    pub fn allows_batches(self) -> bool {
        self == Revision::V2025_03_26
    }

    /// `structuredContent` in tool results (2025-06-18 on).
    pub fn has_structured_content(self) -> bool {
        self >= Revision::V2025_06_18
    }
}

/// The stateless revision: each request carries its version and client capabilities in `_meta`.
pub const STATELESS: &str = "2026-07-28";

/// Whether an MCP-Protocol-Version header names the stateless revision or a later one (a later
/// one is then refused as unsupported by the envelope check, not as a legacy version).
pub fn names_stateless_or_later(header: &str) -> bool {
    fn date(v: &str) -> Option<(u32, u32, u32)> {
        let mut parts = v.splitn(3, '-').map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next()??, parts.next()??))
    }
    matches!((date(header), date(STATELESS)), (Some(h), Some(s)) if h >= s)
}

/// Every revision `server/discover` reports, newest first.
pub fn supported() -> Vec<&'static str> {
    let mut v = vec![STATELESS];
    v.extend(Revision::ALL.map(Revision::as_str));
    v
}

/// Methods the stateless revision removed: unknown there (HTTP 404 + -32601).
const REMOVED_IN_STATELESS: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The era of one request: what every revision-dependent decision looks at.
#[derive(Clone, Debug)]
pub enum Era {
    Legacy(Revision),
    Stateless(Envelope),
}

impl Era {
    pub fn is_stateless(&self) -> bool {
        matches!(self, Era::Stateless(_))
    }

    pub fn envelope(&self) -> Option<&Envelope> {
        match self {
            Era::Stateless(e) => Some(e),
            Era::Legacy(_) => None,
        }
    }

    /// Whether `method` exists in this era.
    pub fn knows(&self, method: &str) -> bool {
        match self {
            // tasks/* are the tasks extension's (2026-07-28), not 2025-11-25's experimental ones
            Era::Legacy(_) => method != "server/discover" && !method.starts_with("tasks/"),
            Era::Stateless(_) => !REMOVED_IN_STATELESS.contains(&method),
        }
    }

    pub fn has_structured_content(&self) -> bool {
        match self {
            Era::Legacy(r) => r.has_structured_content(),
            Era::Stateless(_) => true,
        }
    }

    /// List changes reach stateless clients through subscriptions/listen; the legacy stateless
    /// wire has no stream to send them on.
    pub fn announces_list_changes(&self) -> bool {
        self.is_stateless()
    }

    /// Whether a capability may ask the client for input (MRTR) in this era.
    pub fn can_ask_for_input(&self) -> bool {
        self.is_stateless()
    }

    /// The revision's name.
    pub fn version(&self) -> &'static str {
        match self {
            Era::Legacy(r) => r.as_str(),
            Era::Stateless(_) => STATELESS,
        }
    }

    /// The era as audit rows name it (stable values: audit consumers filter on them).
    pub fn audit_name(&self) -> &'static str {
        match self {
            Era::Legacy(_) => "legacy",
            Era::Stateless(_) => "modern",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_ordered_and_round_trip() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
        assert!(Revision::ALL.windows(2).all(|w| w[0] > w[1]));
        assert_eq!(Revision::parse("2026-07-28"), None);
        assert!(!Revision::V2025_03_26.has_structured_content());
        assert!(Revision::V2025_06_18.has_structured_content());
        assert!(Revision::V2025_03_26.allows_batches());
        assert!(!Revision::V2025_11_25.allows_batches());
    }

    #[test]
    fn stateless_header_classification() {
        for (h, want) in [
            ("2026-07-28", true),
            ("2027-01-01", true),
            ("2025-11-25", false),
            ("1999-01-01", false),
            ("2025-06-18'; --", false),
            ("", false),
        ] {
            assert_eq!(names_stateless_or_later(h), want, "{h}");
        }
    }
}
