//! A skill archive (`.tar.gz`) turned into checked files, and a SKILL.md's frontmatter into JSON.
//! Everything here is pure Rust with hard limits: the archive is verified against its digest
//! before it is decompressed, and nothing in it can name a path outside the skill, a link or a
//! device.
//!
//! Layout (decided here, documented in the README): the archive holds exactly one top-level
//! directory, named like the skill (`tar -czf refunds.tar.gz refunds/`; a leading `./` is
//! ignored), with `SKILL.md` directly inside it. Its frontmatter `name` must equal that directory.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;

/// SEP-2640's per-skill limits, which hosts must accept: 16 MiB in all, 512 files.
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
pub const MAX_FILES: usize = 512;
/// The compressed archive, bounded like its contents.
pub const MAX_ARCHIVE_BYTES: usize = 16 * 1024 * 1024;
/// Entries of any kind (directories too), and the length of a path inside the skill.
const MAX_ENTRIES: usize = 2048;
const MAX_PATH_BYTES: usize = 512;
const MAX_SEGMENT_BYTES: usize = 128;
/// The frontmatter is metadata, not content: small, and shallow.
const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
const MAX_FRONTMATTER_DEPTH: usize = 32;

#[derive(Debug)]
pub struct File {
    /// Relative to the skill's directory, `/`-separated, e.g. `references/FORMS.md`.
    pub path: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug)]
pub struct Skill {
    pub name: String,
    pub frontmatter: Map<String, Value>,
    /// Sorted by path; SKILL.md among them.
    pub files: Vec<File>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Agent Skills naming rules: 1-64 of a-z 0-9 and single inner hyphens.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Path segments are restricted so that a file's URI needs no percent-encoding and no host
/// normalises it into another file: letters, digits, `.`, `_`, `-`, `+`, `~`; never `.` or `..`.
fn valid_segment(s: &str) -> bool {
    (1..=MAX_SEGMENT_BYTES).contains(&s.len())
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+~".contains(&b))
}

/// The verified, unpacked skill in `archive`, or why it is refused.
pub fn unpack(archive: &[u8], sha256: &str) -> Result<Skill, String> {
    if archive.len() > MAX_ARCHIVE_BYTES {
        return Err(format!(
            "the archive is {} bytes, the limit is {MAX_ARCHIVE_BYTES}",
            archive.len()
        ));
    }
    let expected = sha256.trim().to_ascii_lowercase();
    if expected.len() != 64 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("sha256 must be the archive's SHA-256 as 64 hex digits".into());
    }
    if sha256_hex(archive) != expected {
        return Err("the archive does not match its sha256".into());
    }

    // The decompressed stream is capped too (a gzip bomb stops here): contents plus tar headers.
    let cap = MAX_TOTAL_BYTES + (MAX_ENTRIES as u64 + 4) * 3 * 512;
    let gz = flate2::read::GzDecoder::new(archive).take(cap);
    let mut tar = tar::Archive::new(gz);
    let mut top: Option<String> = None;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut total: u64 = 0;
    let bad = |e: std::io::Error| format!("the archive is not a valid .tar.gz: {e}");
    for (n, entry) in tar.entries().map_err(bad)?.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(format!("the archive has more than {MAX_ENTRIES} entries"));
        }
        let mut entry = entry.map_err(bad)?;
        let raw = entry.path_bytes().into_owned();
        let path = std::str::from_utf8(&raw)
            .map_err(|_| "a path in the archive is not UTF-8".to_string())?;
        if path.starts_with('/') || path.contains('\\') {
            return Err(format!(
                "refused path {path:?}: absolute paths are not allowed"
            ));
        }
        let segments: Vec<&str> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .skip_while(|s| *s == ".")
            .collect();
        let kind = entry.header().entry_type();
        let is_dir = kind.is_dir();
        if !(kind.is_file() || is_dir) {
            return Err(format!(
                "refused entry {path:?}: only regular files and directories are allowed (no links, devices or fifos)"
            ));
        }
        if segments.is_empty() {
            if is_dir {
                continue; // "./"
            }
            return Err(format!("refused path {path:?}"));
        }
        if let Some(s) = segments.iter().find(|s| !valid_segment(s)) {
            return Err(format!(
                "refused path {path:?}: segment {s:?} is not 1-{MAX_SEGMENT_BYTES} of A-Z a-z 0-9 . _ - + ~ (and not . or ..)"
            ));
        }
        match &top {
            None => top = Some(segments[0].to_string()),
            Some(t) if t != segments[0] => {
                return Err(format!(
                    "the archive must hold exactly one top-level directory (the skill), found {t:?} and {:?}",
                    segments[0]
                ))
            }
            Some(_) => {}
        }
        if is_dir {
            continue;
        }
        if segments.len() < 2 {
            return Err(format!(
                "refused file {path:?}: files belong inside the skill's directory (tar -czf NAME.tar.gz NAME/)"
            ));
        }
        let rel = segments[1..].join("/");
        if rel.len() > MAX_PATH_BYTES {
            return Err(format!(
                "refused path {path:?}: longer than {MAX_PATH_BYTES} bytes"
            ));
        }
        if files.len() >= MAX_FILES {
            return Err(format!("the skill has more than {MAX_FILES} files"));
        }
        let room = MAX_TOTAL_BYTES - total;
        if entry.size() > room {
            return Err(format!(
                "the skill's files exceed {MAX_TOTAL_BYTES} bytes in all"
            ));
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        (&mut entry)
            .take(room + 1)
            .read_to_end(&mut bytes)
            .map_err(bad)?;
        if bytes.len() as u64 > room {
            return Err(format!(
                "the skill's files exceed {MAX_TOTAL_BYTES} bytes in all"
            ));
        }
        total += bytes.len() as u64;
        if files.insert(rel.clone(), bytes).is_some() {
            return Err(format!("the archive holds {rel:?} twice"));
        }
        // A later directory entry may not shadow this file (and vice versa): checked below.
    }
    let Some(dir) = top else {
        return Err("the archive is empty".into());
    };
    for p in files.keys() {
        let mut prefix = p.as_str();
        while let Some(i) = prefix.rfind('/') {
            prefix = &prefix[..i];
            if files.contains_key(prefix) {
                return Err(format!("{prefix:?} is both a file and a directory"));
            }
        }
    }
    let skill_md = files
        .get("SKILL.md")
        .ok_or_else(|| format!("the skill has no SKILL.md (expected {dir}/SKILL.md)"))?;
    let frontmatter = frontmatter(skill_md)?;
    let name = frontmatter["name"].as_str().unwrap_or_default().to_string();
    if name != dir {
        return Err(format!(
            "the frontmatter name {name:?} does not match the skill's directory {dir:?}"
        ));
    }
    Ok(Skill {
        name,
        frontmatter,
        files: files
            .into_iter()
            .map(|(path, bytes)| File { path, bytes })
            .collect(),
    })
}

/// The YAML frontmatter of a SKILL.md (between a first line `---` and the next `---`), as JSON.
/// It must name the skill (`name`, by the naming rules) and describe it (`description`).
pub fn frontmatter(skill_md: &[u8]) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(skill_md).map_err(|_| "SKILL.md is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let is_fence = |l: &str| l.trim_end_matches(['\r', '\n']).trim_end() == "---";
    if !lines.next().is_some_and(is_fence) {
        return Err("SKILL.md must start with YAML frontmatter (a line ---)".into());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for l in lines {
        if is_fence(l) {
            closed = true;
            break;
        }
        yaml.push_str(l);
        if yaml.len() > MAX_FRONTMATTER_BYTES {
            return Err(format!(
                "SKILL.md's frontmatter is longer than {MAX_FRONTMATTER_BYTES} bytes"
            ));
        }
    }
    if !closed {
        return Err("SKILL.md's frontmatter is not closed by a line ---".into());
    }
    let value = parse_yaml(&yaml)?;
    let Value::Object(map) = value else {
        return Err("SKILL.md's frontmatter must be a YAML mapping".into());
    };
    match map.get("name") {
        Some(Value::String(n)) if valid_name(n) => {}
        Some(Value::String(n)) => {
            return Err(format!(
                "the skill name {n:?} must be 1-64 of a-z 0-9 and single inner hyphens"
            ))
        }
        _ => return Err("SKILL.md's frontmatter has no name".into()),
    }
    match map.get("description") {
        Some(Value::String(d)) if !d.trim().is_empty() => {}
        _ => return Err("SKILL.md's frontmatter has no description".into()),
    }
    Ok(map)
}

/// One YAML document as JSON, with yaml-rust2 (YAML 1.2). Aliases are refused (an alias bomb
/// would expand into far more than the text), as are deep nesting and non-string keys.
fn parse_yaml(text: &str) -> Result<Value, String> {
    use yaml_rust2::parser::{Event, EventReceiver, Parser};
    struct Check {
        depth: usize,
        max: usize,
        alias: bool,
    }
    impl EventReceiver for Check {
        fn on_event(&mut self, ev: Event) {
            match ev {
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    self.depth += 1;
                    self.max = self.max.max(self.depth);
                }
                Event::SequenceEnd | Event::MappingEnd => self.depth = self.depth.saturating_sub(1),
                Event::Alias(_) => self.alias = true,
                _ => {}
            }
        }
    }
    let bad = |e: yaml_rust2::ScanError| format!("SKILL.md's frontmatter is not valid YAML: {e}");
    let mut check = Check {
        depth: 0,
        max: 0,
        alias: false,
    };
    Parser::new_from_str(text)
        .load(&mut check, true)
        .map_err(bad)?;
    if check.alias {
        return Err("SKILL.md's frontmatter uses a YAML alias; write the value out".into());
    }
    if check.max > MAX_FRONTMATTER_DEPTH {
        return Err("SKILL.md's frontmatter is nested too deeply".into());
    }
    let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(bad)?;
    match docs.as_slice() {
        [doc] => to_json(doc),
        [] => Ok(Value::Null),
        _ => Err("SKILL.md's frontmatter holds more than one YAML document".into()),
    }
}

fn to_json(y: &yaml_rust2::Yaml) -> Result<Value, String> {
    use yaml_rust2::Yaml;
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(_) => y
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or("SKILL.md's frontmatter has a number JSON cannot hold")?,
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let Yaml::String(k) = k else {
                    return Err("SKILL.md's frontmatter has a key that is not a string".into());
                };
                m.insert(k.clone(), to_json(v)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err("SKILL.md's frontmatter has a value YAML could not resolve".into())
        }
    })
}

/// The media type a host sees for a skill file, by extension; text when it is UTF-8.
pub fn mime_type(path: &str, bytes: &[u8]) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("sql") => "application/sql",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/typescript",
        Some("html") => "text/html",
        Some("csv") => "text/csv",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

/// A .tar.gz of one skill directory, for chumbo's own skill (built from the files in the repo)
/// and for tests.
pub fn pack(name: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (path, bytes) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, format!("{name}/{path}"), *bytes)
            .expect("appending to an in-memory tar");
    }
    tar.into_inner()
        .and_then(|gz| gz.finish())
        .expect("finishing an in-memory tar.gz")
}
