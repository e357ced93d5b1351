-- What a resources/read is recorded as (its audit row's capability and detail, chumbo.metrics,
-- the trace's target) is the resource that answered. A URI may match several resources: one
-- declared with exactly that URI, then templates. resources/read answers with the first of them
-- the caller may use, but the audit row named the first of them whoever may use it, and took its
-- "audit": {"arguments": true} to record the URI: here vault_index, which anon may not read,
-- while vault_entry, which does not opt in, answered (its template's parameter, the URI, went
-- into the row). Likewise a skill file, which resources/read serves before any resource: a
-- template that also matched its URI was named, with its opt-in. Now the row names what answered
-- and keeps its choice; a read that nothing answered names the first match, as a tool the caller
-- may not call is named.
begin;
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
create function mcp.vault_index() returns text language sql as $$ select 'the index' $$;
create function mcp.vault_entry(id text) returns text language sql as $$ select 'entry ' || id $$;
create function mcp.vault_secret() returns text language sql as $$ select 'secret' $$;
comment on function mcp.vault_index() is '@mcp {"resource": "vault://index", "audit": {"arguments": true}}';
comment on function mcp.vault_entry(text) is '@mcp {"resource": "vault://{id}"}';
comment on function mcp.vault_secret() is '@mcp {"resource": "secret://only", "audit": {"arguments": true}}';
create function mcp.builder_file(file text) returns text language sql as $$ select 'not the skill' $$;
comment on function mcp.builder_file(text) is
  '@mcp {"resource": "skill://chumbo-builder/{file}", "audit": {"arguments": true}}';
revoke execute on function mcp.vault_index(), mcp.vault_entry(text), mcp.vault_secret(),
  mcp.builder_file(text) from public;
grant execute on function mcp.vault_entry(text), mcp.builder_file(text) to anon;
select chumbo.grant_skill('chumbo-builder', 'anon') is not null as granted;
delete from chumbo.audit_events;
create function pg_temp.read(uri text) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'resources/read',
    'params', jsonb_build_object('uri', uri)), '{"role":"anon"}') $$;
create table public.sent (n int generated always as identity, label text, answer jsonb);
insert into public.sent (label, answer) values
  ('exact resource the caller may not read, template answers', pg_temp.read('vault://index')),
  ('template only', pg_temp.read('vault://a1')),
  ('nothing the caller may read', pg_temp.read('secret://only')),
  ('skill file, a template matches too', pg_temp.read('skill://chumbo-builder/SKILL.md'));
select label, left(translate(coalesce(answer #>> '{result,contents,0,text}', answer #>> '{error,code}'), E'\n', ' '), 16)
       as answered
  from public.sent order by n;
select s.label, e.capability, e.outcome, e.detail
  from chumbo.audit_events e join public.sent s on s.n = e.id - (select min(id) from chumbo.audit_events) + 1
 order by e.id;
select capability, calls from chumbo.metrics where method = 'resources/read' order by capability;
-- the trace's facts name the same resource
select spans::jsonb #>> '{messages,0,target}' as trace_target
  from chumbo.http_parts(
    '{"method": "POST", "path": "/mcp", "trace": true, "headers": {"content-type": "application/json", "mcp-protocol-version": "2025-11-25"}}',
    '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"vault://index"}}');
rollback;
