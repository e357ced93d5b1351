//! Skills (SEP-2640, extension `io.modelcontextprotocol/skills`): skill directories the owner
//! installed with chumbo.install_skill, served as `skills/list`, `skills/get` and one resource per
//! file (`skill://<name>/<path>`), each with the SHA-256 and size of its exact stored bytes.
//! The listing is part of the registry (rebuilt when chumbo.schema_version moves); file contents
//! are read on demand. A skill is served only to roles it was granted to (chumbo.grant_skill),
//! and only with the scopes it requires, decided per request like EXECUTE on a tool.

use crate::jsonrpc::RpcError;
use crate::protocol::{Context, Failure};
use crate::session;
use crate::skills_archive;
use base64::Engine;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde::Deserialize;
use serde_json::{json, Map, Value};

pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";

#[derive(Deserialize)]
pub struct SkillFile {
    pub path: String,
    pub digest: String,
    pub size: i64,
    pub mime: String,
}

#[derive(Deserialize)]
pub struct Skill {
    pub name: String,
    pub frontmatter: Map<String, Value>,
    pub scopes: Vec<String>,
    /// Oids of the roles it was granted to.
    pub roles: Vec<u32>,
    pub files: Vec<SkillFile>,
}

impl Skill {
    pub fn uri(&self, path: &str) -> String {
        format!("skill://{}/{path}", self.name)
    }

    fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|f| json!({"uri": self.uri(&f.path), "digest": format!("sha256:{}", f.digest), "size": f.size}))
            .collect();
        json!({"uri": self.uri("SKILL.md"), "frontmatter": self.frontmatter, "resources": resources})
    }

    fn granted_to(&self, role: pg_sys::Oid) -> bool {
        self.roles.iter().any(|&r| {
            // SAFETY: a membership check by oids (a dropped role's oid simply never matches).
            unsafe { pg_sys::has_privs_of_role(role, pg_sys::Oid::from(r)) }
        })
    }
}

/// Every installed skill without contents, as the extension owner (called by registry::build).
pub fn load() -> Vec<Skill> {
    let read = |sql: &str| {
        Spi::connect(|c| c.select(sql, Some(1), &[])?.first().get_one::<JsonB>())
            .ok()
            .flatten()
    };
    // A database still at 0.2.0 (updated library, `alter extension` not yet run) has no skills.
    let present = Spi::connect(|c| {
        c.select(
            "select to_regclass('chumbo.skills') is not null",
            Some(1),
            &[],
        )?
        .first()
        .get_one::<bool>()
    });
    if !matches!(present, Ok(Some(true))) {
        return vec![];
    }
    read(
        "select coalesce(jsonb_agg(jsonb_build_object(
                'name', s.name, 'frontmatter', s.frontmatter, 'scopes', to_jsonb(s.scopes),
                'roles', coalesce((select jsonb_agg(g.role::int8 order by g.role) from chumbo.skill_grants g
                                    where g.skill = s.name), '[]'),
                'files', coalesce((select jsonb_agg(jsonb_build_object('path', f.path, 'digest', f.sha256,
                                                    'size', f.size, 'mime', f.mime_type) order by f.path)
                                     from chumbo.skill_files f where f.skill = s.name), '[]'))
                order by s.name), '[]')
           from chumbo.skills s",
    )
    .and_then(|j| serde_json::from_value(j.0).ok())
    .unwrap_or_default()
}

/// The skills this caller is granted (scopes aside).
fn granted<'r>(ctx: &'r Context) -> impl Iterator<Item = &'r Skill> {
    ctx.registry
        .skills
        .iter()
        .filter(|s| s.granted_to(ctx.caller.role_oid))
}

fn has_scopes(ctx: &Context, s: &Skill) -> bool {
    s.scopes.iter().all(|x| ctx.caller.scopes.contains(x))
}

fn served<'r>(ctx: &'r Context) -> impl Iterator<Item = &'r Skill> {
    granted(ctx).filter(|s| has_scopes(ctx, s))
}

/// The capability entry (`capabilities.extensions`), when the caller is served any skill.
pub fn capability(ctx: &Context) -> Option<(String, Value)> {
    served(ctx).next()?;
    Some((EXTENSION_ID.into(), json!({})))
}

/// `skills/list`: whole entries only, `page_size` of them a page.
pub fn list(ctx: &Context, params: &Map<String, Value>) -> Result<Value, Failure> {
    let offset = crate::protocol::decode_cursor(params)?;
    let page = ctx.registry.settings.page_size.max(1);
    let all: Vec<&Skill> = served(ctx).collect();
    let skills: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(page)
        .map(|s| s.entry())
        .collect();
    let mut result = json!({"skills": skills});
    if offset + page < all.len() {
        result["nextCursor"] = json!(base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("offset:{}", offset + page)));
    }
    Ok(result)
}

/// `skills/get {uri}`: the entry of a skill this caller is served, by its SKILL.md URI.
pub fn get(ctx: &Context, params: &Map<String, Value>) -> Result<Value, Failure> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: \"uri\" must be a string"))?;
    let unknown =
        || RpcError::invalid_params(format!("Unknown skill: {uri}")).with_data(json!({"uri": uri}));
    let skill = granted(ctx)
        .find(|s| s.uri("SKILL.md") == uri)
        .ok_or_else(unknown)?;
    if !has_scopes(ctx, skill) {
        return Err(Failure {
            error: unknown(),
            missing_scopes: skill.scopes.clone(),
        });
    }
    Ok(json!({"skill": skill.entry()}))
}

/// Every file of every skill served to the caller, for `resources/list`.
pub fn resources(ctx: &Context) -> Vec<Value> {
    let mut out = vec![];
    for s in served(ctx) {
        for f in &s.files {
            let mut r = json!({"uri": s.uri(&f.path), "name": format!("{}/{}", s.name, f.path),
                               "mimeType": f.mime, "size": f.size});
            if f.path == "SKILL.md" {
                r["name"] = s.frontmatter["name"].clone();
                r["description"] = s.frontmatter["description"].clone();
            }
            out.push(r);
        }
    }
    out
}

/// `resources/read` of a skill file: None when `uri` is no file of a skill granted to the caller
/// (the usual resource lookup and not-found answer follow).
pub fn read(ctx: &Context, uri: &str) -> Option<Result<Value, Failure>> {
    let rest = uri.strip_prefix("skill://")?;
    let (name, path) = rest.split_once('/')?;
    let skill = granted(ctx).find(|s| s.name == name)?;
    let file = skill.files.iter().find(|f| f.path == path)?;
    if !has_scopes(ctx, skill) {
        // answered like a missing resource (-32002 legacy, -32602 modern), plus the scope challenge
        let message = format!("Resource not found: {uri}");
        let error = match ctx.modern {
            Some(_) => RpcError::invalid_params(message),
            None => RpcError::new(crate::jsonrpc::RESOURCE_NOT_FOUND, message),
        }
        .with_data(json!({"uri": uri}));
        return Some(Err(Failure {
            error,
            missing_scopes: skill.scopes.clone(),
        }));
    }
    let (name, path) = (name.to_string(), path.to_string());
    let bytes = session::as_owner(move || {
        Spi::connect(|c| {
            c.select(
                "select content from chumbo.skill_files where skill = $1 and path = $2",
                Some(1),
                &[name.into(), path.into()],
            )?
            .first()
            .get_one::<Vec<u8>>()
        })
    })
    .ok()
    .flatten()?;
    let mut content = json!({"uri": uri, "mimeType": file.mime});
    // Exactly the hashed bytes: text only when they are UTF-8 as they are, else base64.
    match String::from_utf8(bytes) {
        Ok(text) => content["text"] = json!(text),
        Err(e) => {
            content["blob"] =
                json!(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))
        }
    }
    Some(Ok(json!({"contents": [content]})))
}

/// chumbo.install_skill's parser: the verified archive as rows, one per file.
#[pg_extern(name = "_skill_unpack")]
#[allow(clippy::type_complexity)]
fn skill_unpack(
    archive: &[u8],
    sha256: &str,
) -> TableIterator<
    'static,
    (
        name!(name, String),
        name!(frontmatter, JsonB),
        name!(path, String),
        name!(content, Vec<u8>),
        name!(digest, String),
        name!(size, i32),
        name!(mime_type, String),
    ),
> {
    let skill = match skills_archive::unpack(archive, sha256) {
        Ok(s) => s,
        Err(e) => {
            ereport!(
                PgLogLevel::ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("chumbo.install_skill: {e}")
            );
            unreachable!("ereport at ERROR does not return")
        }
    };
    let frontmatter = Value::Object(skill.frontmatter);
    let name = skill.name;
    TableIterator::new(skill.files.into_iter().map(move |f| {
        let digest = skills_archive::sha256_hex(&f.bytes);
        let size = f.bytes.len() as i32;
        let mime = skills_archive::mime_type(&f.path, &f.bytes).to_string();
        (
            name.clone(),
            JsonB(frontmatter.clone()),
            f.path,
            f.bytes,
            digest,
            size,
            mime,
        )
    }))
}

/// chumbo's own skill, `chumbo-builder`, packed from skills/chumbo-builder/ at build time: the
/// same archive path as any other skill (chumbo.install_skill) installs it.
const BUILDER: &[(&str, &[u8])] = &[
    (
        "SKILL.md",
        include_bytes!("../skills/chumbo-builder/SKILL.md"),
    ),
    (
        "references/metadata.md",
        include_bytes!("../skills/chumbo-builder/references/metadata.md"),
    ),
    (
        "references/security.md",
        include_bytes!("../skills/chumbo-builder/references/security.md"),
    ),
    (
        "references/state-and-limits.md",
        include_bytes!("../skills/chumbo-builder/references/state-and-limits.md"),
    ),
];

#[pg_extern(name = "_builtin_skill")]
fn builtin_skill() -> TableIterator<'static, (name!(archive, Vec<u8>), name!(sha256, String))> {
    let archive = skills_archive::pack("chumbo-builder", BUILDER);
    let digest = skills_archive::sha256_hex(&archive);
    TableIterator::once((archive, digest))
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use crate::skills_archive::{frontmatter, pack, sha256_hex, unpack, MAX_TOTAL_BYTES};

    const MD: &[u8] =
        b"---\nname: demo\ndescription: A demo skill\nmetadata:\n  version: 2\n---\n# Demo\n";

    fn ok(archive: &[u8]) -> Result<crate::skills_archive::Skill, String> {
        unpack(archive, &sha256_hex(archive))
    }

    /// A tar.gz with one raw entry (header fields written as given, bypassing tar's checks).
    fn raw_entry(path: &[u8], kind: tar::EntryType, body: &[u8], link: Option<&str>) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_ustar();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.as_old_mut().name[..path.len()].copy_from_slice(path);
        if let Some(l) = link {
            h.set_link_name(l).unwrap();
        }
        h.set_cksum();
        b.append(&h, body).unwrap();
        let md = MD;
        let mut h2 = tar::Header::new_ustar();
        h2.set_size(md.len() as u64);
        h2.set_mode(0o644);
        b.append_data(&mut h2, "demo/SKILL.md", md).unwrap();
        b.into_inner().unwrap().finish().unwrap()
    }

    #[pgrx::pg_test]
    fn round_trip() {
        let a = pack("demo", &[("SKILL.md", MD), ("references/x.md", b"x\r\n")]);
        let s = ok(&a).unwrap();
        assert_eq!(s.name, "demo");
        assert_eq!(s.frontmatter["metadata"]["version"], 2);
        assert_eq!(s.files.len(), 2);
        assert_eq!(s.files[1].path, "references/x.md");
        assert_eq!(s.files[1].bytes, b"x\r\n");
    }

    #[pgrx::pg_test]
    fn refusals() {
        let a = pack("demo", &[("SKILL.md", MD)]);
        assert!(unpack(&a, &"0".repeat(64))
            .unwrap_err()
            .contains("does not match"));
        assert!(unpack(&a, "xyz").unwrap_err().contains("64 hex"));
        let e = ok(&raw_entry(
            b"demo/../../etc/passwd",
            tar::EntryType::Regular,
            b"x",
            None,
        ));
        assert!(e.unwrap_err().contains("refused path"));
        let e = ok(&raw_entry(
            b"/etc/passwd",
            tar::EntryType::Regular,
            b"x",
            None,
        ));
        assert!(e.unwrap_err().contains("absolute"));
        let e = ok(&raw_entry(
            b"demo/l",
            tar::EntryType::Symlink,
            b"",
            Some("/etc/passwd"),
        ));
        assert!(e.unwrap_err().contains("no links"));
        let e = ok(&raw_entry(
            b"demo/h",
            tar::EntryType::Link,
            b"",
            Some("demo/SKILL.md"),
        ));
        assert!(e.unwrap_err().contains("no links"));
        let e = ok(&raw_entry(b"demo/dev", tar::EntryType::Char, b"", None));
        assert!(e.unwrap_err().contains("devices"));
        let e = ok(&raw_entry(
            b"other/x.md",
            tar::EntryType::Regular,
            b"x",
            None,
        ));
        assert!(e.unwrap_err().contains("one top-level directory"));
        let e = ok(&pack("demo", &[("README.md", b"no skill")]));
        assert!(e.unwrap_err().contains("no SKILL.md"));
        let e = ok(&pack("other", &[("SKILL.md", MD)]));
        assert!(e
            .unwrap_err()
            .contains("does not match the skill's directory"));
        let big = vec![b'a'; MAX_TOTAL_BYTES as usize];
        let e = ok(&pack("demo", &[("SKILL.md", MD), ("big.txt", &big)]));
        assert!(e.unwrap_err().contains("exceed"));
        assert!(ok(b"not a gzip").unwrap_err().contains("not a valid"));
    }

    #[pgrx::pg_test]
    fn frontmatter_rules() {
        assert!(frontmatter(b"# no frontmatter").is_err());
        assert!(frontmatter(b"---\nname: Demo\ndescription: d\n---\n").is_err());
        assert!(frontmatter(b"---\nname: demo\n---\n").is_err());
        assert!(frontmatter(b"---\nname: demo\ndescription: d\n").is_err());
        let bomb = b"---\nname: demo\ndescription: d\na: &a [x, x]\nb: [*a, *a]\n---\n";
        assert!(frontmatter(bomb).unwrap_err().contains("alias"));
        let fm = frontmatter(
            b"\xef\xbb\xbf---\r\nname: demo\r\ndescription: 'yes'\r\nn: 1.5\r\nb: true\r\n---\r\n",
        )
        .unwrap();
        assert_eq!(fm["description"], "yes");
        assert_eq!(fm["n"], 1.5);
        assert_eq!(fm["b"], true);
    }
}
