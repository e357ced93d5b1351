//! Skills (SEP-2640, extension `io.modelcontextprotocol/skills`): skill directories the owner
//! installed with chumbo.install_skill, served as `skills/list`, `skills/get` and one resource per
//! file (`skill://<name>/<path>`), each with the SHA-256 and size of its exact stored bytes.
//! This module stores and loads them: the listing is part of the registry (rebuilt when
//! chumbo.schema_version moves); file contents are read on demand. The methods and who is served
//! what (grants, scopes, per request like EXECUTE on a tool) are src/protocol/skills.rs.

use crate::catalog::skills_archive;
use crate::identity::session;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde::Deserialize;
use serde_json::{json, Map, Value};

#[derive(Clone, Deserialize)]
pub struct SkillFile {
    pub path: String,
    pub digest: String,
    pub size: i64,
    pub mime: String,
}

#[derive(Clone, Deserialize)]
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

    pub fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|f| json!({"uri": self.uri(&f.path), "digest": format!("sha256:{}", f.digest), "size": f.size}))
            .collect();
        json!({"uri": self.uri("SKILL.md"), "frontmatter": self.frontmatter, "resources": resources})
    }

    pub fn granted_to(&self, role: pg_sys::Oid) -> bool {
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
    if !crate::postgres::spi_read::relation_exists("chumbo.skills") {
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

/// The exact stored bytes of one skill file, read as the extension owner.
pub fn file_content(name: &str, path: &str) -> Option<Vec<u8>> {
    let (name, path) = (name.to_string(), path.to_string());
    session::as_owner(move || {
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
    .flatten()
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
        Err(e) => crate::error::raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("chumbo.install_skill: {e}"),
            None,
        ),
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
        include_bytes!("../../skills/chumbo-builder/SKILL.md"),
    ),
    (
        "references/metadata.md",
        include_bytes!("../../skills/chumbo-builder/references/metadata.md"),
    ),
    (
        "references/security.md",
        include_bytes!("../../skills/chumbo-builder/references/security.md"),
    ),
    (
        "references/state-and-limits.md",
        include_bytes!("../../skills/chumbo-builder/references/state-and-limits.md"),
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
    use crate::catalog::skills_archive::{frontmatter, pack, sha256_hex, unpack, MAX_TOTAL_BYTES};

    const MD: &[u8] =
        b"---\nname: demo\ndescription: A demo skill\nmetadata:\n  version: 2\n---\n# Demo\n";

    fn ok(archive: &[u8]) -> Result<crate::catalog::skills_archive::Skill, String> {
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
