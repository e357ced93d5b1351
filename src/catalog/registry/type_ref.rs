//! A type a reflected function names, by oid, with its descriptor read once per catalog read.

use super::*;

/// A type a function names: its oid as sql/reflect.sql gives it, then its descriptor
/// (sql/reflect_type_descriptors.sql), one shared by every function that names the type: 10,000
/// functions name some 40,000 types, of a handful of kinds.
#[derive(Debug, Deserialize)]
#[serde(from = "u32")]
pub(super) struct TypeRef {
    pub(super) oid: u32,
    pub(super) descriptor: Option<Rc<ReflectedType>>,
}

impl From<u32> for TypeRef {
    fn from(oid: u32) -> Self {
        TypeRef {
            oid,
            descriptor: None,
        }
    }
}

/// What a type whose descriptor was not read reflects as (it cannot be dropped while a function
/// names it, so only a descriptor serde could not read): a pseudo-type, which a parameter may not
/// have (its function is reported, never the whole registry lost) and a result is taken as text.
static UNREAD: std::sync::LazyLock<ReflectedType> = std::sync::LazyLock::new(|| ReflectedType {
    oid: 0,
    name: "a type that could not be read".into(),
    sql: "pg_catalog.unknown".into(),
    typtype: "p".into(),
    category: "X".into(),
    labels: None,
    elem: None,
    base: None,
    attributes: None,
});

impl std::ops::Deref for TypeRef {
    type Target = ReflectedType;
    fn deref(&self) -> &ReflectedType {
        self.descriptor.as_deref().unwrap_or(&UNREAD)
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::super::reflect::{reflect, ReflectedFunction};
    use super::*;

    /// A type whose descriptor was not read (sql/reflect_type_descriptors.sql gave none for it):
    /// a parameter of it is a problem of its own function only, and a result of it is text.
    #[pgrx::pg_test]
    fn a_type_without_its_descriptor_is_a_problem_of_its_function_only() {
        let row = r#"{"oid": 1, "name": "f", "identity": "mcp.f(integer)", "comment": null,
            "prokind": "f", "security_definer": false, "owner": 10, "volatility": "s",
            "sets_search_path": false, "returns_set": false, "return_type": 23, "variadic": false,
            "n_defaults": 0, "executors": [0], "args": [{"name": "a", "mode": "i", "type": 23}]}"#;
        let mut f: ReflectedFunction = serde_json::from_str(row).unwrap();
        f.resolve(&HashMap::default());
        let (entry, capability, _) = reflect(&f, false);
        assert!(capability.is_none());
        assert!(
            entry
                .problems
                .iter()
                .any(|p| p.contains("could not be read")),
            "{:?}",
            entry.problems
        );
        assert_eq!(types::return_shape(&f.return_type), ReturnShape::Text);
        // with its descriptor the same row is a capability
        let int4: ReflectedType = serde_json::from_str(
            r#"{"oid": 23, "name": "integer", "sql": "pg_catalog.int4", "typtype": "b",
                "category": "N", "enum": null, "elem": null, "base": null}"#,
        )
        .unwrap();
        f.resolve(&HashMap::from_iter([(23, Rc::new(int4))]));
        assert!(reflect(&f, false).1.is_some());
    }
}
