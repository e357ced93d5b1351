-- What a message is about, in its audit row (capability), in chumbo.metrics and in the trace's
-- facts (target), is what the server declared, never the client's own text. Before, it was the
-- request's `name` or `uri` as sent: a resource URI that matched a template put the template's
-- parameters (the resource's arguments: an e-mail address here) into the audit row, and from
-- there into chumbo.metrics, which a monitoring role may read; and an unknown tool's name, any
-- string a client makes up, named the trace's span and a series of the edge's duration metric,
-- as did a made-up method. Now: a tool's or prompt's name when one by that name exists (whoever
-- may call it), the declared URI or URI template of the resource a URI matches, else nothing; a
-- method chumbo does not know is `_OTHER`. A resource that opts in
-- (@mcp {"audit": {"arguments": true}}) has its URI recorded in `detail`, as a tool or a prompt
-- that opts in has its arguments. And a URI names the resource declared with exactly that URI
-- before any template it also matches (before, the first match in the registry's order: notes://{id} took
-- notes://index from the resource declared as notes://index).
begin;
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
create function mcp.echo(words text) returns text language sql as $$ select 'said ' || words $$;
create function mcp.admin_only() returns text language sql as $$ select 'no' $$;
create function mcp.note(id text) returns text language sql as $$ select 'note of ' || id $$;
create function mcp.note_index() returns text language sql as $$ select 'all notes' $$;
create function mcp.ledger(id text) returns text language sql as $$ select 'entry ' || id $$;
create function mcp.greet(who text) returns text language sql as $$ select 'Say hello to ' || who $$;
create function mcp.greet_audited(who text) returns text language sql as $$ select 'Say hello to ' || who $$;
comment on function mcp.note(text) is '@mcp {"resource": "notes://{id}"}';
comment on function mcp.note_index() is '@mcp {"resource": "notes://index"}';
comment on function mcp.ledger(text) is '@mcp {"resource": "ledger://{id}", "audit": {"arguments": true}}';
comment on function mcp.greet(text) is '@mcp {"prompt": true}';
comment on function mcp.greet_audited(text) is '@mcp {"prompt": true, "audit": {"arguments": true}}';
revoke execute on function mcp.echo(text), mcp.admin_only(), mcp.note(text), mcp.note_index(),
  mcp.ledger(text), mcp.greet(text), mcp.greet_audited(text) from public;
grant execute on function mcp.echo(text), mcp.note(text), mcp.note_index(), mcp.ledger(text),
  mcp.greet(text), mcp.greet_audited(text) to anon;
delete from chumbo.audit_events;
create function pg_temp.send(method text, params jsonb) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params), '{"role":"anon"}') $$;
create table public.sent (n int generated always as identity, label text, answer jsonb);
insert into public.sent (label, answer) values
  ('tool', pg_temp.send('tools/call', '{"name": "echo", "arguments": {"words": "zebra"}}')),
  ('tool the caller may not call', pg_temp.send('tools/call', '{"name": "admin_only"}')),
  ('unknown tool', pg_temp.send('tools/call', '{"name": "carol@example.com"}')),
  ('prompt', pg_temp.send('prompts/get', '{"name": "greet", "arguments": {"who": "zebra"}}')),
  ('unknown prompt', pg_temp.send('prompts/get', '{"name": "dave@example.com"}')),
  ('prompt that opts in', pg_temp.send('prompts/get', '{"name": "greet_audited", "arguments": {"who": "zebra"}}')),
  ('template', pg_temp.send('resources/read', '{"uri": "notes://alice%40example.com"}')),
  ('static resource', pg_temp.send('resources/read', '{"uri": "notes://index"}')),
  ('no resource matches', pg_temp.send('resources/read', '{"uri": "nomatch://bob@example.com"}')),
  ('template that opts in', pg_temp.send('resources/read', '{"uri": "ledger://erin%40example.com"}')),
  ('unknown method', pg_temp.send('frank@example.com/list', '{}'));
-- each answered as before: the change is only in what is recorded
select label, coalesce(answer #>> '{result,contents,0,text}', answer #>> '{result,content,0,text}',
                       answer #>> '{result,messages,0,content,text}', answer #>> '{error,code}') as answered
  from public.sent order by n;
select s.label, e.method, e.capability, e.outcome, e.detail
  from chumbo.audit_events e join public.sent s on s.n = e.id - (select min(id) from chumbo.audit_events) + 1
 order by e.id;
-- nothing the client wrote into a name or URI is in a row, unless the resource opted in
select count(*) as leaks from chumbo.audit_events e
 where (e.method || coalesce(e.capability, '') || coalesce(e.detail::text, '')) ~ '(alice|bob|carol|dave|frank)(@|%40)example\.com';
select method, capability, calls from chumbo.metrics order by method, capability;
select count(*) as leaks_in_metrics from chumbo.metrics where method || coalesce(capability, '') ~ '(@|%40)example\.com';

-- the trace's facts (what names the edge's span and its duration metric's series) likewise
create function pg_temp.target(body jsonb) returns jsonb language sql as $$
  select spans::jsonb #> '{messages,0}' from chumbo.http_parts(
    jsonb_build_object('method', 'POST', 'path', '/mcp', 'trace', true,
      'headers', jsonb_build_object('content-type', 'application/json', 'mcp-protocol-version', '2025-11-25'))::text,
    body::text) $$;
select m ->> 'method' as method, m ->> 'target' as target, m ->> 'outcome' as outcome
  from (values (1, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"words":"zebra"}}}'::jsonb),
               (2, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"carol@example.com"}}'),
               (3, '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"notes://alice%40example.com"}}'),
               (4, '{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"nomatch://bob@example.com"}}'),
               (5, '{"jsonrpc":"2.0","id":5,"method":"frank@example.com/list"}')) b(n, body),
       pg_temp.target(body) m
 order by n;
rollback;
