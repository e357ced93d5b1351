-- MRTR (MCP 2026-07-28): chumbo.input() asks the client for input; the call ends as
-- input_required with an HMAC-protected requestState bound to the principal, method, capability
-- and arguments, expiring and one-time. Tampered, replayed, cross-user, cross-tool and
-- cross-argument state is rejected; undeclared client capabilities are -32021; the legacy era
-- gets a clear tool error.
begin;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function mcp.two_questions(topic text default 'x') returns text language plpgsql as $$
declare a jsonb; b jsonb;
begin
  a := chumbo.input('step1', '{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}');
  b := chumbo.input('step2', '{"method":"elicitation/create","params":{"message":"Color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}}}');
  insert into public.documents (project_id, title, body)
    values ('a1000000-0000-4000-8000-000000000001', 'from mrtr', (a -> 'content' ->> 'name') || ' likes ' || (b -> 'content' ->> 'color'));
  return 'Hello ' || (a -> 'content' ->> 'name') || ', who likes ' || (b -> 'content' ->> 'color') || ' (' || topic || ')';
end $$;
revoke execute on function mcp.two_questions(text) from public;
grant execute on function mcp.two_questions(text) to authenticated;
create function mcp.other_tool() returns text language sql as $$ select 'other' $$;
grant execute on function mcp.other_tool() to authenticated;

create function pg_temp.call(claims jsonb, tool text, extra jsonb, caps jsonb default '{"elicitation":{}}', args jsonb default '{}') returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 9, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args,
      '_meta', jsonb_build_object('io.modelcontextprotocol/protocolVersion', '2026-07-28',
                                  'io.modelcontextprotocol/clientCapabilities', caps)) || extra), claims) $$;
create function pg_temp.summary(r jsonb) returns text language sql as $$
  select coalesce(r #>> '{result,resultType}' || ' ' || coalesce((select string_agg(k, ',') from jsonb_object_keys(r #> '{result,inputRequests}') k),
                                                                  r #>> '{result,content,0,text}'),
                  'error ' || (r #>> '{error,code}') || ': ' || (r #>> '{error,message}')) $$;
create temp table rounds (n int primary key, r jsonb);

-- round 1: asks for step1, with a requestState
insert into rounds select 1, pg_temp.call(:'alice', 'two_questions', '{}');
select pg_temp.summary(r), r #> '{result,inputRequests,step1,method}' as method, r #> '{result}' ? 'requestState' as has_state,
       r #> '{result}' ? 'ttlMs' as cache_hints from rounds where n = 1;
-- round 2: answers step1, is asked step2 with a new state that carries step1
insert into rounds select 2, pg_temp.call(:'alice', 'two_questions',
  jsonb_build_object('inputResponses', '{"step1":{"action":"accept","content":{"name":"Ann"}}}'::jsonb, 'requestState', r #> '{result,requestState}')) from rounds where n = 1;
select pg_temp.summary(r) from rounds where n = 2;
-- round 3: answers step2 only; step1 comes from the state; the write happens once, now
insert into rounds select 3, pg_temp.call(:'alice', 'two_questions',
  jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"teal"}}}'::jsonb, 'requestState', r #> '{result,requestState}')) from rounds where n = 2;
select pg_temp.summary(r) from rounds where n = 3;
select count(*) as documents_written from public.documents where title = 'from mrtr';

-- attacks on a fresh round-2 state
insert into rounds select 4, pg_temp.call(:'alice', 'two_questions',
  jsonb_build_object('inputResponses', '{"step1":{"action":"accept","content":{"name":"Eve"}}}'::jsonb, 'requestState', (select r #> '{result,requestState}' from rounds where n = 1)));
select pg_temp.summary(r) as replayed_round1_state from rounds where n = 4;
insert into rounds select 5, pg_temp.call(:'alice', 'two_questions', '{}');
insert into rounds select 6, pg_temp.call(:'alice', 'two_questions',
  jsonb_build_object('inputResponses', '{"step1":{"action":"accept","content":{"name":"Ann"}}}'::jsonb, 'requestState', r #> '{result,requestState}')) from rounds where n = 5;
select label, pg_temp.summary(r) from (values
  ('tampered payload', pg_temp.call(:'alice', 'two_questions', jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"red"}}}'::jsonb,
      'requestState', (select 'x' || substr(r #>> '{result,requestState}', 2) from rounds where n = 6)))),
  ('tampered suffix', pg_temp.call(:'alice', 'two_questions', jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"red"}}}'::jsonb,
      'requestState', (select (r #>> '{result,requestState}') || '-TAMPERED' from rounds where n = 6)))),
  ('not a string', pg_temp.call(:'alice', 'two_questions', '{"requestState": 42}')),
  ('other user', pg_temp.call(:'bob', 'two_questions', jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"red"}}}'::jsonb,
      'requestState', (select r #> '{result,requestState}' from rounds where n = 6)))),
  ('other tool', pg_temp.call(:'alice', 'other_tool', jsonb_build_object('requestState', (select r #> '{result,requestState}' from rounds where n = 6)))),
  ('other arguments', pg_temp.call(:'alice', 'two_questions', jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"red"}}}'::jsonb,
      'requestState', (select r #> '{result,requestState}' from rounds where n = 6)), '{"elicitation":{}}', '{"topic":"y"}')),
  ('inputResponses not an object', pg_temp.call(:'alice', 'two_questions', '{"inputResponses": "yes"}')),
  ('a response not an object', pg_temp.call(:'alice', 'two_questions', '{"inputResponses": {"step1": 5}}')),
  ('wrong key: asked again', pg_temp.call(:'alice', 'two_questions', '{"inputResponses": {"nope": {"action":"accept"}}}')),
  ('elicitation not declared', pg_temp.call(:'alice', 'two_questions', '{}', '{"sampling":{}}'))
) as t(label, r);
-- the untampered round-2 state still works once (none of the above consumed it), then never again
select pg_temp.summary(pg_temp.call(:'alice', 'two_questions', jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"red"}}}'::jsonb,
      'requestState', (select r #> '{result,requestState}' from rounds where n = 6)))) as first_use,
       pg_temp.summary(pg_temp.call(:'alice', 'two_questions', jsonb_build_object('inputResponses', '{"step2":{"action":"accept","content":{"color":"red"}}}'::jsonb,
      'requestState', (select r #> '{result,requestState}' from rounds where n = 6)))) as second_use;
-- rotating the key invalidates states issued before
insert into rounds select 7, pg_temp.call(:'alice', 'two_questions', '{}');
select chumbo.rotate_key('request_state');
select pg_temp.summary(pg_temp.call(:'alice', 'two_questions', jsonb_build_object('inputResponses', '{"step1":{"action":"accept","content":{"name":"Ann"}}}'::jsonb,
      'requestState', (select r #> '{result,requestState}' from rounds where n = 7)))) as after_rotation;
-- -32021 carries the missing capability as an object
select pg_temp.call(:'alice', 'two_questions', '{}', '{}') -> 'error' -> 'data' as required;
-- legacy era: a clear tool error, no input_required
select r #> '{result,isError}' as is_error, r #>> '{result,content,0,text}' as text
  from chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"two_questions"}}', :'alice') r;
-- expired state: a real state of this call (its binding intact), with only its expiry moved into
-- the past and signed again with the real key, is refused as expired; the same re-signing with
-- only a new nonce is accepted, so the refusal is the expiry's and not the signature's
insert into rounds select 8, pg_temp.call(:'alice', 'two_questions', '{}');
create function pg_temp.b64url_decode(t text) returns bytea language sql as $$
  select decode(rpad(translate(t, '-_', '+/'), (length(t) + 3) / 4 * 4, '='), 'base64') $$;
create function pg_temp.state_payload(state text) returns jsonb language sql as $$
  select convert_from(pg_temp.b64url_decode(split_part(state, '.', 1)), 'UTF8')::jsonb $$;
create function pg_temp.resign(state text, changes jsonb) returns text language sql as $$
  select regress.sign_token('request state', p)
    from (select convert_to((pg_temp.state_payload(state) || changes)::text, 'UTF8') as p) s $$;
create function pg_temp.answer_step1(state text) returns jsonb language sql as $$
  select pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}', 'two_questions',
    jsonb_build_object('inputResponses', '{"step1":{"action":"accept","content":{"name":"Ann"}}}'::jsonb, 'requestState', state)) $$;
select pg_temp.state_payload(r #>> '{result,requestState}') ?& array['p', 'm', 'c', 'a', 'x', 'n'] as bound_and_expiring,
       (pg_temp.state_payload(r #>> '{result,requestState}') ->> 'x')::bigint > extract(epoch from now()) as expires_later
  from rounds where n = 8;
select pg_temp.summary(pg_temp.answer_step1(pg_temp.resign(r #>> '{result,requestState}', '{"x": 1, "n": "regress-expired"}'))) as expired,
       pg_temp.summary(pg_temp.answer_step1(pg_temp.resign(r #>> '{result,requestState}', '{"n": "regress-resigned"}'))) as resigned_unexpired
  from rounds where n = 8;
-- and the real state itself, once the clock (chumbo.now(), pinned) is past its expiry
savepoint pinned;
select set_config('chumbo.pinned_now', to_timestamp((pg_temp.state_payload(r #>> '{result,requestState}') ->> 'x')::bigint + 1)::text, true) is not null as pinned
  from rounds where n = 8;
select pg_temp.summary(pg_temp.answer_step1(r #>> '{result,requestState}')) as expired_by_the_clock from rounds where n = 8;
rollback to savepoint pinned;
select pg_temp.summary(pg_temp.answer_step1(r #>> '{result,requestState}')) as unexpired_real_state from rounds where n = 8;
rollback;
