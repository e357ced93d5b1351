-- What a message's span may carry of what its capability was given, by the same opt-in as its
-- audit row (@mcp {"audit": {"arguments": true}}; src/api/recorded.rs): the `spans` column's facts
-- (what the edge turns into the MCP span's attributes) hold a tool's arguments
-- (gen_ai.tool.call.arguments) only when the tool opts in, and a resource URI (mcp.resource.uri)
-- when it is as the server declared it (a resource without parameters) or its resource opts in;
-- a template's URI carries its parameters, kept out otherwise. Nothing of it for a message whose
-- trace is not sampled. Both are the client's own text, so each is cut to 4,096 bytes (never
-- inside a character); the audit row keeps them whole.
begin;
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
create function mcp.shout(words text) returns text language sql as $$ select upper(words) $$;
create function mcp.whisper(words text) returns text language sql as $$ select lower(words) $$;
create function mcp.doc_index() returns text language sql as $$ select 'all docs' $$;
create function mcp.doc(id text) returns text language sql as $$ select 'doc ' || id $$;
create function mcp.entry(id text) returns text language sql as $$ select 'entry ' || id $$;
comment on function mcp.shout(text) is '@mcp {"audit": {"arguments": true}}';
comment on function mcp.doc_index() is '@mcp {"resource": "docs://index"}';
comment on function mcp.doc(text) is '@mcp {"resource": "docs://{id}"}';
comment on function mcp.entry(text) is '@mcp {"resource": "entries://{id}", "audit": {"arguments": true}}';
grant execute on function mcp.shout(text), mcp.whisper(text), mcp.doc_index(), mcp.doc(text),
  mcp.entry(text) to anon;
-- the facts of one message, sent with a traceparent whose flags are `flags`
create function pg_temp.facts(body jsonb, flags text default '01') returns jsonb language sql as $$
  select spans::jsonb #> '{messages,0}' from chumbo.http_parts(
    jsonb_build_object('method', 'POST', 'path', '/mcp', 'trace', true,
      'headers', jsonb_build_object('content-type', 'application/json', 'mcp-protocol-version', '2025-11-25',
        'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-' || flags))::text,
    body::text) $$;
create function pg_temp.call(tool text, words text) returns jsonb language sql as $$
  select jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', jsonb_build_object('words', words))) $$;
create function pg_temp.read(uri text) returns jsonb language sql as $$
  select jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'resources/read', 'params', jsonb_build_object('uri', uri)) $$;
select label, f ->> 'target' as target, f ->> 'outcome' as outcome, f ->> 'tool_arguments' as tool_arguments,
       f ->> 'resource_uri' as resource_uri
  from (values
    (1, 'tool that opts in', pg_temp.facts(pg_temp.call('shout', 'zebra'))),
    (2, 'the same, trace not sampled', pg_temp.facts(pg_temp.call('shout', 'zebra'), '00')),
    (3, 'tool that does not', pg_temp.facts(pg_temp.call('whisper', 'zebra'))),
    (4, 'resource without parameters', pg_temp.facts(pg_temp.read('docs://index'))),
    (5, 'template that does not opt in', pg_temp.facts(pg_temp.read('docs://zebra'))),
    (6, 'template that opts in', pg_temp.facts(pg_temp.read('entries://zebra'))),
    (7, 'the same, trace not sampled', pg_temp.facts(pg_temp.read('entries://zebra'), '00')),
    (8, 'unknown URI', pg_temp.facts(pg_temp.read('nothing://zebra'))),
    (9, 'a tool''s call naming a uri', pg_temp.facts(
          '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whisper","arguments":{"words":"x"},"uri":"whisper"}}'))
  ) t(n, label, f)
 order by n;
-- long ones: cut to 4,096 bytes, a two-byte character across the limit left out whole
select octet_length(f ->> 'tool_arguments') as arguments_bytes, left(f ->> 'tool_arguments', 11) as starts,
       right(f ->> 'tool_arguments', 2) as ends
  from pg_temp.facts(pg_temp.call('shout', 'x' || repeat('é', 3000))) f;
select octet_length(f ->> 'resource_uri') as uri_bytes, left(f ->> 'resource_uri', 12) as starts
  from pg_temp.facts(pg_temp.read('entries://' || repeat('a', 5000))) f;
select length(detail #>> '{arguments,words}') as audited_characters
  from chumbo.audit_events where method = 'tools/call' and capability = 'shout' order by id desc limit 1;
rollback;
