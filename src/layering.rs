//! The module layering, enforced: no two top-level modules may depend on each other, directly or
//! through others. A cycle is how "modern imports protocol imports modern" started; without one,
//! every module can be read (and tested) knowing only the modules below it.
//!
//! The layers, lowest first; a module uses only modules of lower layers or its own
//! ([LAYERS], checked by `every_module_uses_only_lower_layers`):
//! 1. values: error, jsonrpc, json_number, settings, content, events, trace_context (W3C
//!    traceparent)
//! 2. postgres/: read-only SPI, the backend guards and pinned clock, the hard time bound
//! 3. identity/: the principal, tokens and claims, API keys, the switch to the caller's role
//!    (session) and the settings spliced in for a call
//! 4. values about a caller: tokens (signed tokens of every kind), datum, render, result_json
//! 5. catalog/: the registry and what it is built from (types, metadata, predicates, URI
//!    templates, skills, MCP Apps)
//! 6. bookkeeping/: in-flight slots, rate limits and audit (ledger), the audit queue, run handles
//! 7. call/: one tools/call as a plan and its steps, and the per-request scope and MRTR rounds
//! 8. protocol/: every MCP method, by family
//! 9. api/: the entry points (chumbo.handle/http/mcp) and chumbo.doctor
//!
//! The test reads every `crate::<module>` path in src (in `use` lines and inline paths alike,
//! comments skipped) and fails on any cycle between top-level modules and on any use of a higher
//! layer; a second one does the same for cycles among the files of each folder (`super::<m>`,
//! `crate::<folder>::<m>`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn top_level_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a path").as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `text` names as `crate::<module>`, comments ignored.
fn used_modules(text: &str) -> BTreeSet<String> {
    names_after(text, "crate::")
}

/// The names `text` follows `prefix` with (`prefix` then an identifier, or `use prefix{a, b::c}`),
/// comments ignored.
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut used = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            rest = &rest[at + prefix.len()..];
            let name = ident(rest);
            if !name.is_empty() {
                used.insert(name);
            }
        }
        if let Some(group) = code.trim_start().strip_prefix(&format!("use {prefix}{{")) {
            for part in group.split(',') {
                let name = ident(part.trim());
                if !name.is_empty() {
                    used.insert(name);
                }
            }
        }
    }
    used
}

/// Inside the folder `src/<folder>/`: each file's module (mod.rs, which only declares them, left
/// out) and the sibling modules it names as `super::<m>` or `crate::<folder>::<m>`.
fn folder_graph(folder: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    let mut all = vec![];
    files(&dir, &mut all);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let siblings: BTreeSet<String> = all
        .iter()
        .filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|m| m != "mod")
        .collect();
    for file in &all {
        let module = top_level_module(&dir, file);
        if module == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("readable");
        let mut used = names_after(&text, "super::");
        used.extend(names_after(&text, &format!("crate::{folder}::")));
        let deps = graph.entry(module.clone()).or_default();
        deps.extend(
            used.into_iter()
                .filter(|m| *m != module && siblings.contains(m)),
        );
    }
    graph
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = vec![];
    files(&src, &mut all);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in all {
        let module = top_level_module(&src, &file);
        if module == "lib" || module == "layering" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable");
        let deps = graph.entry(module.clone()).or_default();
        deps.extend(used_modules(&text).into_iter().filter(|m| *m != module));
    }
    graph
}

/// A cycle through `at`, if any, as the list of modules on it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0 = unvisited, 1 = on the current path, 2 = done
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m).copied().unwrap_or(0) {
            1 => {
                let start = path.iter().position(|p| p == m).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            2 => return None,
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, graph, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if let Some(c) = visit(m, graph, &mut state, &mut vec![]) {
            return Some(c);
        }
    }
    None
}

/// The top-level modules of src, by layer, lowest first (see the module comment).
const LAYERS: &[&[&str]] = &[
    &[
        "error",
        "jsonrpc",
        "json_number",
        "settings",
        "content",
        "events",
        "trace_context",
    ],
    &["postgres"],
    &["identity"],
    &["tokens", "datum", "render", "result_json"],
    &["catalog"],
    &["bookkeeping"],
    &["call"],
    &["protocol"],
    &["api"],
];

/// Each module's layer; a module of src missing from [LAYERS] is an error, so that a new module
/// gets a place before it gets dependents.
fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| {
            panic!("src/{module} is in no layer: add it to LAYERS in src/layering.rs")
        })
}

/// The uses of a module of a higher layer than the user's own, as "user -> used" lines.
fn upward_uses(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut upward = vec![];
    for (module, deps) in graph {
        for dep in deps {
            if layer_of(dep) > layer_of(module) {
                upward.push(format!("{module} -> {dep}"));
            }
        }
    }
    upward
}

#[test]
fn every_module_uses_only_lower_layers() {
    let graph = graph();
    let upward = upward_uses(&graph);
    assert!(
        upward.is_empty(),
        "a lower layer uses a higher one: {upward:?}"
    );
    let placed: usize = LAYERS.iter().map(|l| l.len()).sum();
    assert_eq!(
        placed,
        graph.len(),
        "LAYERS names modules src does not have"
    );
}

#[test]
fn the_layer_check_sees_upward_uses() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("call".into()).or_default().insert("catalog".into());
    assert!(upward_uses(&g).is_empty());
    g.entry("identity".into())
        .or_default()
        .insert("call".into());
    assert_eq!(upward_uses(&g), vec!["identity -> call".to_string()]);
}

#[test]
fn no_cycle_between_top_level_modules() {
    let graph = graph();
    assert!(graph.contains_key("api") && graph.contains_key("protocol"));
    if let Some(cycle) = find_cycle(&graph) {
        panic!("module cycle: {}", cycle.join(" -> "));
    }
}

/// The same inside every folder of src: no two files of a folder depend on each other.
#[test]
fn no_cycle_inside_folders() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).expect("src is readable") {
        let path = entry.expect("an entry").path();
        if !path.is_dir() {
            continue;
        }
        let folder = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let graph = folder_graph(&folder);
        if let Some(cycle) = find_cycle(&graph) {
            panic!("module cycle in src/{folder}: {}", cycle.join(" -> "));
        }
        checked += 1;
    }
    assert!(checked > 0, "src has folders (protocol at least)");
}

#[test]
fn the_cycle_check_sees_cycles() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default();
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).map(|c| c.len()), Some(4));
    assert_eq!(
        used_modules("use crate::{a, b::c};\n x = crate::d::e(); // crate::f"),
        ["a", "b", "d"].iter().map(|s| s.to_string()).collect()
    );
    assert_eq!(
        names_after(
            "use super::{a, b::c};\n use super::d::{self, E}; // super::f",
            "super::"
        ),
        ["a", "b", "d"].iter().map(|s| s.to_string()).collect()
    );
}

/// A file a reader can hold in their head: none over 800 lines (tests included). And at most 14
/// files at the top of `src/`: modules go into folders by concern.
#[test]
fn src_layout_limits() {
    const MAX_LINES: usize = 800;
    const MAX_TOP_LEVEL_FILES: usize = 14;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = vec![];
    files(&src, &mut all);
    let long: Vec<String> = all
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f)
                .expect("readable")
                .lines()
                .count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
    let top = all
        .iter()
        .filter(|f| f.parent() == Some(src.as_path()))
        .count();
    assert!(
        top <= MAX_TOP_LEVEL_FILES,
        "{top} files directly in src/ (at most {MAX_TOP_LEVEL_FILES}): put new modules in a folder"
    );
}
