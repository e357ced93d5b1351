-- Skills (SEP-2640): skill directories stored as exact bytes, served by src/catalog/skills.rs to the roles
-- they were granted to. Every function here is the owner's (finalize.sql revokes them from
-- PUBLIC; nothing is granted to anon/authenticated), and runs inside the caller's transaction.
-- A change moves the capability version like DDL does, so skills/list and resources/list answer
-- from it on the next request and listen streams are told.

create table chumbo.skills (
    name text primary key check (name ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and length(name) <= 64),
    -- SKILL.md's frontmatter as JSON (src/skills_archive.rs parses it with yaml-rust2)
    frontmatter jsonb not null check (jsonb_typeof(frontmatter) = 'object'),
    -- OAuth scopes a caller's token must carry, besides a grant
    scopes text[] not null default '{}',
    archive_sha256 text not null,
    installed_at timestamptz not null default now()
);
revoke all on chumbo.skills from public;

create table chumbo.skill_files (
    skill text not null references chumbo.skills (name) on delete cascade,
    path text not null,
    content bytea not null,
    sha256 text not null,
    size integer not null,
    mime_type text not null,
    primary key (skill, path)
);
revoke all on chumbo.skill_files from public;

-- Like EXECUTE on a tool: a skill is served to members of these roles only.
create table chumbo.skill_grants (
    skill text not null references chumbo.skills (name) on delete cascade,
    role oid not null,
    primary key (skill, role)
);
revoke all on chumbo.skill_grants from public;

create function chumbo._skills_changed() returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed(null);
    perform pg_notify('chumbo_capabilities', 'SKILLS');
end $$;

create function chumbo._skill_named(name text) returns text
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
begin
    if not exists (select from chumbo.skills s where s.name = _skill_named.name) then
        raise exception using errcode = '42704', message = pg_catalog.format('chumbo: no skill named %L', name);
    end if;
    return name;
end $$;

create function chumbo.install_skill(archive bytea, sha256 text) returns text
language plpgsql set search_path = pg_catalog, pg_temp as $$
declare
    f record;
    skill_name text;
begin
    if archive is null or sha256 is null then
        raise exception using errcode = '22004', message = 'chumbo.install_skill: archive and sha256 are required';
    end if;
    -- verified against the digest, then unpacked with hard limits, before anything is stored
    for f in select * from chumbo._skill_unpack(archive, sha256) loop
        if skill_name is null then
            skill_name := f.name;
            -- installing a name again replaces its files; grants and scopes stay
            insert into chumbo.skills as s (name, frontmatter, archive_sha256)
            values (f.name, f.frontmatter, lower(install_skill.sha256))
            on conflict (name) do update
               set frontmatter = excluded.frontmatter, archive_sha256 = excluded.archive_sha256,
                   installed_at = now();
            delete from chumbo.skill_files x where x.skill = skill_name;
        end if;
        insert into chumbo.skill_files (skill, path, content, sha256, size, mime_type)
        values (f.name, f.path, f.content, f.digest, f.size, f.mime_type);
    end loop;
    perform chumbo._skills_changed();
    return skill_name;
end $$;
comment on function chumbo.install_skill(bytea, text) is
  'Install (or replace) a skill from a .tar.gz holding one directory named like the skill, with SKILL.md (YAML frontmatter: name, description) inside; sha256 is the archive''s SHA-256 in hex. At most 16 MiB and 512 files; no links, devices or paths outside the directory. Returns the skill''s name. Grants and scopes of a replaced skill stay.';

create function chumbo.drop_skill(name text) returns boolean
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    delete from chumbo.skills s where s.name = drop_skill.name;
    if not found then
        return false;
    end if;
    perform chumbo._skills_changed();
    return true;
end $$;
comment on function chumbo.drop_skill(text) is 'Remove a skill, its files and its grants; false when there was none.';

create function chumbo.grant_skill(name text, role regrole) returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    insert into chumbo.skill_grants (skill, role) values (chumbo._skill_named(grant_skill.name), grant_skill.role)
    on conflict do nothing;
    perform chumbo._skills_changed();
end $$;
comment on function chumbo.grant_skill(text, regrole) is
  'Serve a skill to members of a role (like GRANT EXECUTE on a tool): it appears in skills/list and resources/list, and its files can be read.';

create function chumbo.revoke_skill(name text, role regrole) returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    delete from chumbo.skill_grants g where g.skill = chumbo._skill_named(revoke_skill.name) and g.role = revoke_skill.role;
    perform chumbo._skills_changed();
end $$;
comment on function chumbo.revoke_skill(text, regrole) is 'Stop serving a skill to members of a role.';

create function chumbo.require_skill_scopes(name text, scopes text[]) returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    update chumbo.skills s set scopes = coalesce(require_skill_scopes.scopes, '{}')
     where s.name = chumbo._skill_named(require_skill_scopes.name);
    perform chumbo._skills_changed();
end $$;
comment on function chumbo.require_skill_scopes(text, text[]) is
  'OAuth scopes a caller''s token must carry to be served a skill (besides a grant); ''{}'' for none.';

create function chumbo.skills()
returns table (name text, description text, files integer, bytes bigint, archive_sha256 text,
               granted_to text[], scopes text[], installed_at timestamptz)
language sql stable set search_path = pg_catalog, pg_temp as $$
    select s.name, s.frontmatter ->> 'description',
           (select count(*)::integer from chumbo.skill_files f where f.skill = s.name),
           (select coalesce(sum(f.size), 0)::bigint from chumbo.skill_files f where f.skill = s.name),
           s.archive_sha256,
           coalesce((select array_agg(g.role::regrole::text order by g.role::regrole::text)
                       from chumbo.skill_grants g where g.skill = s.name), '{}'),
           s.scopes, s.installed_at
      from chumbo.skills s order by s.name
$$;
comment on function chumbo.skills() is 'The installed skills: files, bytes, archive digest, the roles they are granted to, required scopes.';

-- chumbo's own skill (skills/chumbo-builder in the repository), granted to nobody.
select chumbo.install_skill(b.archive, b.sha256) from chumbo._builtin_skill() b;
