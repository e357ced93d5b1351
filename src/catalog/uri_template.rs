//! RFC 6570 level-1 URI templates (`app://projects/{id}`): the only level resource templates use.

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Literal(String),
    Var(String),
}

#[derive(Clone, Debug)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    pub fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = vec![];
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_string()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or("unclosed '{' in resource URI template")?
                + open;
            let var = &rest[open + 1..close];
            if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "'{{{var}}}' is not a level-1 URI template variable"
                ));
            }
            if matches!(parts.last(), Some(Part::Var(_))) {
                return Err("two template variables must be separated by literal text".into());
            }
            parts.push(Part::Var(var.to_string()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err("unmatched '}' in resource URI template".into());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        Ok(UriTemplate { parts })
    }

    pub fn variables(&self) -> Vec<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Var(v) => Some(v.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn is_static(&self) -> bool {
        self.variables().is_empty()
    }

    /// The variables' decoded values when `uri` matches, else None.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut out = vec![];
        let mut rest = uri;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    // Level-1 expansion leaves only unreserved characters and %XX escapes.
                    if raw.is_empty()
                        || !raw
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b))
                    {
                        return None;
                    }
                    out.push((name.clone(), percent_decode(raw)?));
                    rest = &rest[end..];
                }
            }
            i += 1;
        }
        rest.is_empty().then_some(out)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    #[pgrx::pg_test]
    fn level1_matching() {
        let t = UriTemplate::parse("app://projects/{id}/docs/{doc}").unwrap();
        assert_eq!(t.variables(), vec!["id", "doc"]);
        let cases: [(&str, Option<Vec<(&str, &str)>>); 6] = [
            (
                "app://projects/7/docs/a%20b",
                Some(vec![("id", "7"), ("doc", "a b")]),
            ),
            ("app://projects//docs/x", None),
            ("app://projects/7/docs/", None),
            ("app://projects/a/b/docs/x", None),
            ("app://projects/7/docs/x/extra", None),
            ("other://projects/7/docs/x", None),
        ];
        for (uri, want) in cases {
            let got = t.matches(uri);
            let want = want.map(|v| {
                v.into_iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect()
            });
            assert_eq!(got, want, "{uri}");
        }
        assert!(UriTemplate::parse("x://{a}{b}").is_err());
        assert!(UriTemplate::parse("x://{a").is_err());
        assert!(UriTemplate::parse("x://{+a}").is_err());
        assert!(UriTemplate::parse("test://static-text")
            .unwrap()
            .is_static());
    }
}
