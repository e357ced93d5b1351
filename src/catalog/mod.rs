//! What the server offers: the registry of capabilities reflected from schema `mcp` ([registry])
//! with its types and metadata ([types], [metadata]), the app's policy functions ([predicates]),
//! URI templates ([uri_template]), skills ([skills], [skills_archive]) and the allocation
//! accounting of the registry's cache ([alloc]).

pub mod alloc;
pub mod apps;
pub mod metadata;
pub mod predicates;
pub mod registry;
pub mod skills;
pub mod skills_archive;
pub mod types;
pub mod uri_template;
