-- Skills (SEP-2640): archives built with real tar (tests/regress/data/skills/make.sh) installed
-- with chumbo.install_skill; stored digests equal sha256sum of the files and resources/read
-- returns exactly those bytes; refused archives store nothing; a skill is served only to roles
-- it was granted to and with its scopes; skills/list pages whole entries, skills/get -32602 for
-- an unknown URI; every change moves the capability version; the functions are the owner's.
\getenv abs_srcdir PG_ABS_SRCDIR
\set make :abs_srcdir/data/skills/make.sh
\set demo :abs_srcdir/data/skills/demo
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set alice_scoped '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated","scope":"openid skills:read"}'
create function pg_temp.rpc(claims jsonb, method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params), claims) $$;
create function pg_temp.modern(claims jsonb, method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method,
          'params', params || jsonb_build_object('_meta', jsonb_build_object(
            'io.modelcontextprotocol/protocolVersion', '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities', '{}'::jsonb))), claims) $$;
create function pg_temp.names(claims jsonb) returns jsonb language sql
  as $$ select jsonb_path_query_array(pg_temp.rpc(claims, 'skills/list'), '$.result.skills[*].frontmatter.name') $$;
create function pg_temp.version() returns bigint language sql
  as $$ select max(version) from chumbo.schema_changes $$;

-- 1. chumbo's own skill is installed with the extension, granted to nobody (the example app grants it)
select name, files, granted_to, scopes from chumbo.skills();

-- 2. a real tarball, installed: one row per file, digests equal sha256sum of the files
\set f `bash :'make' demo`
\set tgz `base64 -w0 :'f'`
\set tgz_sha `sha256sum :'f' | cut -c1-64`
\set md_sha `sha256sum :'demo'/SKILL.md | cut -c1-64`
\set guide_sha `sha256sum :'demo'/references/guide.md | cut -c1-64`
\set logo_sha `sha256sum :'demo'/logo.bin | cut -c1-64`
select pg_temp.version() as v0 \gset
select chumbo.install_skill(decode(:'tgz', 'base64'), :'tgz_sha') as installed;
select pg_temp.version() > :v0 as version_moved;
select path, size, mime_type,
       sha256 = case path when 'SKILL.md' then :'md_sha' when 'references/guide.md' then :'guide_sha'
                          when 'logo.bin' then :'logo_sha' end as sha256_matches_sha256sum
  from chumbo.skill_files where skill = 'demo' order by path;
select name, description, files, bytes, archive_sha256 = :'tgz_sha' as archive_sha256_matches, granted_to
  from chumbo.skills() where name = 'demo';
select frontmatter from chumbo.skills where name = 'demo';

-- 3. granted to nobody yet: not listed, not gettable, not readable
select pg_temp.names(:'alice') as alice_sees;
select r -> 'error' ->> 'code' as code, r -> 'error' ->> 'message' as message
  from pg_temp.rpc(:'alice', 'skills/get', '{"uri":"skill://demo/SKILL.md"}') r;
select r -> 'error' ->> 'code' as code
  from pg_temp.rpc(:'alice', 'resources/read', '{"uri":"skill://demo/SKILL.md"}') r;

-- 4. granted to authenticated: listed, gettable, readable; the entry's digests are sha256sum's
select chumbo.grant_skill('demo', 'authenticated');
select pg_temp.names(:'alice') as alice_sees, pg_temp.names(null) as anon_sees;
select r -> 'result' -> 'skill' as entry
  from pg_temp.rpc(:'alice', 'skills/get', '{"uri":"skill://demo/SKILL.md"}') r;
select (select e from jsonb_array_elements(pg_temp.rpc(:'alice', 'skills/list') #> '{result,skills}') e
         where e ->> 'uri' = 'skill://demo/SKILL.md')
       = pg_temp.rpc(:'alice', 'skills/get', '{"uri":"skill://demo/SKILL.md"}') #> '{result,skill}' as list_entry_equals_get;
select e ->> 'uri' as uri, e ->> 'digest' = 'sha256:' || case e ->> 'uri'
         when 'skill://demo/SKILL.md' then :'md_sha' when 'skill://demo/references/guide.md' then :'guide_sha'
         when 'skill://demo/logo.bin' then :'logo_sha' end as digest_is_sha256sum, e -> 'size' as size
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'skills/get', '{"uri":"skill://demo/SKILL.md"}') #> '{result,skill,resources}') e;
-- resources/read returns exactly the hashed bytes: text as is (CRLF, no final newline), binary as blob
select c ->> 'uri' as uri, c ->> 'mimeType' as mime, c ? 'text' as is_text,
       encode(sha256(coalesce(convert_to(c ->> 'text', 'UTF8'), decode(c ->> 'blob', 'base64'))), 'hex')
         = case c ->> 'uri' when 'skill://demo/SKILL.md' then :'md_sha'
             when 'skill://demo/references/guide.md' then :'guide_sha' when 'skill://demo/logo.bin' then :'logo_sha' end
         as bytes_match
  from unnest(array['skill://demo/SKILL.md', 'skill://demo/references/guide.md', 'skill://demo/logo.bin']) u,
       lateral jsonb_array_elements(pg_temp.rpc(:'alice', 'resources/read', jsonb_build_object('uri', u)) #> '{result,contents}') c;
-- a file the skill does not have, and a skill URI for anon
select r -> 'error' ->> 'code' as code
  from pg_temp.rpc(:'alice', 'resources/read', '{"uri":"skill://demo/references/missing.md"}') r;
select r -> 'error' ->> 'code' as code
  from pg_temp.rpc(null, 'resources/read', '{"uri":"skill://demo/SKILL.md"}') r;
-- resources/list has every file; SKILL.md named and described from the frontmatter
select r ->> 'uri' as uri, r ->> 'name' as name, r ->> 'mimeType' as mime, r -> 'size' as size, r ->> 'description' as description
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'resources/list') #> '{result,resources}') r
 where r ->> 'uri' like 'skill://demo/%';
-- the capability, both eras
select pg_temp.rpc(:'alice', 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}')
         #> '{result,capabilities,extensions}' as legacy_extensions,
       pg_temp.modern(:'alice', 'server/discover') #> '{result,capabilities,extensions}' as modern_extensions,
       pg_temp.rpc(null, 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}')
         #> '{result,capabilities,extensions}' as anon_extensions;
-- 2026-07-28: cache hints on skills/list and skills/get; -32602 for an unknown skill
select r #>> '{result,resultType}' as result_type, r #> '{result,ttlMs}' is not null as ttl, r #>> '{result,cacheScope}' as scope
  from pg_temp.modern(:'alice', 'skills/list') r;
select r #>> '{result,resultType}' as result_type, r #> '{result,ttlMs}' is not null as ttl, r #>> '{result,cacheScope}' as scope
  from pg_temp.modern(:'alice', 'skills/get', '{"uri":"skill://demo/SKILL.md"}') r;
select r -> 'error' ->> 'code' as code
  from pg_temp.modern(:'alice', 'skills/get', '{"uri":"skill://nope/SKILL.md"}') r;
select r -> 'error' ->> 'code' as code
  from pg_temp.rpc(:'alice', 'skills/get', '{"uri":"skill://demo/references/guide.md"}') r;

-- 5. paging: one entry a page, never split, every skill once
select chumbo.configure('{"page_size": 1}') -> 'page_size' as page_size;
with recursive pages(n, body) as (
  select 1, pg_temp.rpc(:'alice', 'skills/list')
  union all
  select n + 1, pg_temp.rpc(:'alice', 'skills/list', jsonb_build_object('cursor', body #>> '{result,nextCursor}'))
    from pages where body #> '{result,nextCursor}' is not null and n < 10)
select n, jsonb_array_length(body #> '{result,skills}') as entries, body #>> '{result,skills,0,frontmatter,name}' as skill,
       jsonb_array_length(body #> '{result,skills,0,resources}') as resources
  from pages order by n;
select chumbo.configure('{"page_size": null}') -> 'page_size' as page_size;

-- 6. scopes: a skill may require scopes besides the grant
select chumbo.require_skill_scopes('demo', '{skills:read}');
select pg_temp.names(:'alice') as without_scope, pg_temp.names(:'alice_scoped') as with_scope;
select r -> 'error' ->> 'code' as code
  from pg_temp.rpc(:'alice', 'resources/read', '{"uri":"skill://demo/SKILL.md"}') r;
select chumbo.require_skill_scopes('demo', '{}');

-- 7. installing the name again replaces the files and keeps the grant
\set f2 `bash :'make' demo2`
\set tgz2 `base64 -w0 :'f2'`
\set tgz2_sha `sha256sum :'f2' | cut -c1-64`
select pg_temp.version() as v1 \gset
select chumbo.install_skill(decode(:'tgz2', 'base64'), :'tgz2_sha') as replaced;
select pg_temp.version() > :v1 as version_moved;
select e ->> 'uri' as uri, e -> 'size' as size
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'skills/get', '{"uri":"skill://demo/SKILL.md"}') #> '{result,skill,resources}') e;
select c ->> 'text' as guide
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'resources/read', '{"uri":"skill://demo/references/guide.md"}') #> '{result,contents}') c;

-- 8. refused archives: each names its reason, and nothing is stored or changed
\set ON_ERROR_STOP 0
savepoint s;
select chumbo.install_skill(decode(:'tgz', 'base64'), repeat('0', 64));
rollback to savepoint s;
select chumbo.install_skill(decode(:'tgz', 'base64'), 'not hex');
rollback to savepoint s;
\set bad `bash :'make' traversal`
\set bad_tgz `base64 -w0 :'bad'`
\set bad_sha `sha256sum :'bad' | cut -c1-64`
select chumbo.install_skill(decode(:'bad_tgz', 'base64'), :'bad_sha');
rollback to savepoint s;
\set bad `bash :'make' symlink`
\set bad_tgz `base64 -w0 :'bad'`
\set bad_sha `sha256sum :'bad' | cut -c1-64`
select chumbo.install_skill(decode(:'bad_tgz', 'base64'), :'bad_sha');
rollback to savepoint s;
\set bad `bash :'make' oversize`
\set bad_tgz `base64 -w0 :'bad'`
\set bad_sha `sha256sum :'bad' | cut -c1-64`
select chumbo.install_skill(decode(:'bad_tgz', 'base64'), :'bad_sha');
rollback to savepoint s;
\set bad `bash :'make' no-skill-md`
\set bad_tgz `base64 -w0 :'bad'`
\set bad_sha `sha256sum :'bad' | cut -c1-64`
select chumbo.install_skill(decode(:'bad_tgz', 'base64'), :'bad_sha');
rollback to savepoint s;
\set bad `bash :'make' mismatch`
\set bad_tgz `base64 -w0 :'bad'`
\set bad_sha `sha256sum :'bad' | cut -c1-64`
select chumbo.install_skill(decode(:'bad_tgz', 'base64'), :'bad_sha');
rollback to savepoint s;
\set bad `bash :'make' two-dirs`
\set bad_tgz `base64 -w0 :'bad'`
\set bad_sha `sha256sum :'bad' | cut -c1-64`
select chumbo.install_skill(decode(:'bad_tgz', 'base64'), :'bad_sha');
rollback to savepoint s;
select chumbo.install_skill(decode(repeat('00', 17 * 1024 * 1024), 'hex'), repeat('0', 64));
rollback to savepoint s;
select chumbo.grant_skill('nope', 'authenticated');
rollback to savepoint s;
-- 9. owner-only: anon and authenticated can call none of it and read no skill table
set local role authenticated;
select chumbo.install_skill(decode(:'tgz', 'base64'), :'tgz_sha');
rollback to savepoint s;
set local role authenticated;
select chumbo.grant_skill('demo', 'anon');
rollback to savepoint s;
set local role authenticated;
select * from chumbo.skills();
rollback to savepoint s;
set local role anon;
select content from chumbo.skill_files;
rollback to savepoint s;
set local role anon;
select chumbo._skill_unpack(decode(:'tgz', 'base64'), :'tgz_sha');
rollback to savepoint s;
\set ON_ERROR_STOP 1
select path from chumbo.skill_files where skill = 'demo' order by path;

-- 10. revoke hides it again; drop removes it, files and grants
select chumbo.revoke_skill('demo', 'authenticated');
select pg_temp.names(:'alice') as after_revoke;
select chumbo.grant_skill('demo', 'authenticated');
select chumbo.drop_skill('demo') as dropped, chumbo.drop_skill('demo') as dropped_again;
select pg_temp.names(:'alice') as after_drop,
       (select count(*) from chumbo.skill_files where skill = 'demo') as files,
       (select count(*) from chumbo.skill_grants where skill = 'demo') as grants;
rollback;
