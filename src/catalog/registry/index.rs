//! The capabilities a registry serves, in reflection order, with the lookups requests make of
//! them: by name and kind, each kind's own list, and the few that offer completions or are linked
//! to an app. A listing of the prompts or resources, a resource URI, the apps a caller is served:
//! each walks only what can answer it, not every tool (with 10,000 tools, resources/list walked
//! all of them; bench/analysis.md, issue 32, session 28).

use super::{Capability, Kind};
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

#[derive(Default)]
pub struct Capabilities {
    all: Vec<Rc<Capability>>,
    /// Positions in `all` by name and namespace ([namespace]).
    by_name: HashMap<(String, u8), u32>,
    /// Positions in `all` of each kind (`Kind as usize`), in order.
    by_kind: [Vec<u32>; 4],
    /// Positions of the capabilities that declare completions.
    completing: Vec<u32>,
    /// Positions of the tools linked to an app (`_meta.ui.resourceUri`).
    linked: Vec<u32>,
    requires_scopes: bool,
}

/// Tools, prompts and resources each have names of their own; a resource and a resource template
/// share theirs.
fn namespace(kind: Kind) -> u8 {
    match kind {
        Kind::Tool => 0,
        Kind::Resource | Kind::ResourceTemplate => 1,
        Kind::Prompt => 2,
    }
}

impl Capabilities {
    pub fn reserve(&mut self, n: usize) {
        self.all.reserve(n);
        self.by_name.reserve(n);
    }

    /// Adds `c`, unless a capability of its name and namespace came first (the first one wins);
    /// whether it was added.
    pub fn add(&mut self, c: &Rc<Capability>) -> bool {
        let at = self.all.len() as u32;
        match self.by_name.entry((c.name.clone(), namespace(c.kind))) {
            std::collections::hash_map::Entry::Occupied(_) => return false,
            std::collections::hash_map::Entry::Vacant(v) => v.insert(at),
        };
        self.by_kind[c.kind as usize].push(at);
        if !c.meta.completions.is_empty() {
            self.completing.push(at);
        }
        if c.kind == Kind::Tool && c.meta.app_uri().is_some() {
            self.linked.push(at);
        }
        self.requires_scopes |= !c.meta.scopes.is_empty();
        self.all.push(c.clone());
        true
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Every capability, in reflection order.
    #[cfg(any(test, feature = "pg_test"))]
    pub fn iter(&self) -> impl Iterator<Item = &Capability> {
        self.all.iter().map(|c| &**c)
    }

    /// The capability of that name in `kind`'s namespace.
    pub fn find(&self, name: &str, kind: Kind) -> Option<&Capability> {
        let at = *self.by_name.get(&(name.to_string(), namespace(kind)))?;
        Some(&*self.all[at as usize])
    }

    /// The capabilities of `kind`, in reflection order.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Capability> {
        self.at(&self.by_kind[kind as usize])
    }

    /// The capabilities that declare completions, in reflection order.
    pub fn completing(&self) -> impl Iterator<Item = &Capability> {
        self.at(&self.completing)
    }

    /// The tools linked to an app, in reflection order.
    pub fn linked_to_apps(&self) -> impl Iterator<Item = &Capability> {
        self.at(&self.linked)
    }

    /// Whether any capability requires scopes (a scope resolver is asked only then).
    pub fn require_scopes(&self) -> bool {
        self.requires_scopes
    }

    /// What a resource URI names, as resources/read resolves it: a resource declared with exactly
    /// that URI before the templates it matches (in reflection order), with their variables.
    pub fn resources_matching<'r>(
        &'r self,
        uri: &'r str,
    ) -> impl Iterator<Item = (&'r Capability, Vec<(String, String)>)> + 'r {
        self.of_kind(Kind::Resource)
            .chain(self.of_kind(Kind::ResourceTemplate))
            .filter_map(move |c| Some((c, c.template.as_ref()?.matches(uri)?)))
    }

    fn at<'r>(&'r self, positions: &'r [u32]) -> impl Iterator<Item = &'r Capability> + 'r {
        positions.iter().map(|&at| &*self.all[at as usize])
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::super::{build, Capability, Kind};
    use pgrx::prelude::*;

    fn names<'a>(list: impl Iterator<Item = &'a Capability>) -> Vec<String> {
        list.map(|c| format!("{} {:?}", c.name, c.kind)).collect()
    }

    /// Each list the index keeps is exactly what filtering every capability would give, in the
    /// same order; a name is found in its own namespace; a URI goes to the resource declared with
    /// it before a template that matches it.
    #[pgrx::pg_test]
    fn the_index_lists_what_a_walk_of_every_capability_would() {
        Spi::run(
            r#"do $$ begin
               for i in 1..30 loop
                 execute format('create function mcp.t%s() returns int language sql as %L', i, 'select 1');
               end loop;
             end $$;
             create function mcp.note(id text) returns text language sql as 'select id';
             create function mcp.note_index() returns text language sql as 'select ''index''';
             create function mcp.greet(who text) returns text language sql as 'select who';
             create function mcp.board() returns int language sql as 'select 1';
             create function mcp.secret() returns int language sql as 'select 1';
             comment on function mcp.note(text) is '@mcp {"resource": "notes://{id}"}';
             comment on function mcp.note_index() is '@mcp {"resource": "notes://index"}';
             comment on function mcp.greet(text) is '@mcp {"prompt": true, "completions": {"who": ["ann", "bob"]}}';
             comment on function mcp.board() is '@mcp {"ui": {"resourceUri": "ui://notes/board"}}';
             comment on function mcp.secret() is '@mcp {"scopes": ["admin"]}';"#,
        )
        .unwrap();
        let r = build(0, true, None, None);
        let all = &r.capabilities;
        for kind in [
            Kind::Tool,
            Kind::Resource,
            Kind::ResourceTemplate,
            Kind::Prompt,
        ] {
            assert_eq!(
                names(all.of_kind(kind)),
                names(all.iter().filter(|c| c.kind == kind))
            );
        }
        assert_eq!(names(all.of_kind(Kind::Tool)).len(), 32);
        assert_eq!(
            names(all.completing()),
            names(all.iter().filter(|c| !c.meta.completions.is_empty()))
        );
        assert_eq!(names(all.completing()), ["greet Prompt"]);
        assert_eq!(names(all.linked_to_apps()), ["board Tool"]);
        assert!(all.require_scopes());
        let found = |name, kind| all.find(name, kind).map(|c| (c.name.as_str(), c.kind));
        assert_eq!(
            found("note", Kind::Resource),
            Some(("note", Kind::ResourceTemplate))
        );
        assert_eq!(found("greet", Kind::Prompt), Some(("greet", Kind::Prompt)));
        assert_eq!(found("greet", Kind::Tool), None);
        assert_eq!(found("t7", Kind::Tool), Some(("t7", Kind::Tool)));
        let first = |uri| {
            all.resources_matching(uri)
                .next()
                .and_then(|(c, _)| c.meta.resource.clone())
        };
        assert_eq!(first("notes://index").as_deref(), Some("notes://index"));
        assert_eq!(first("notes://7").as_deref(), Some("notes://{id}"));
        assert_eq!(first("other://7"), None);
        Spi::run("drop function mcp.secret()").unwrap();
        assert!(!build(0, true, None, None).capabilities.require_scopes());
    }
}
