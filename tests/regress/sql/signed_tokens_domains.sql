-- The four kinds of token chumbo signs with its request_state secret (audit gap G4): run handles
-- (src/bookkeeping/runs.rs), page cursors (src/pages.rs), MRTR requestStates (src/call/mrtr.rs) and approval
-- tokens (src/approval.rs) are all signed by src/tokens.rs, base64url(payload).base64url(HMAC-SHA256),
-- each kind with a key of its own (HMAC of the secret over its purpose label). So a genuine token
-- of Alice's, presented by Alice where another kind is expected, is refused with exactly the answer
-- a well-formed forgery gets (a payload and 32 random bytes): all 12 pairs. (src/tokens.rs's unit
-- test kinds_never_open_as_each_other checks the same for every ordered pair of kinds.)
--
-- Proof that the labels are what refuses them: each kind's payload signed again here with the
-- real secret (regress.sign_token) as its own kind reproduces the token exactly; signed as the
-- slot's kind (what every token would carry if the kinds shared a key), it passes the integrity
-- check and gets another answer ("issued for another user, tool or arguments"): red if the kinds
-- shared a key. In the run-handle slot a foreign payload is refused either way (it carries no run
-- id), so there the label is the second line of defence, not the only one.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.pages() returns setof int language sql stable as $$ select generate_series(1, 5) $$;
comment on function mcp.pages() is '@mcp {"page": {"rows": 2}}';
create function mcp.asks() returns text language plpgsql as $$
begin
  return chumbo.input('name', '{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}') #>> '{content,name}';
end $$;
create function mcp.approve_me() returns text language sql as $$ select 'approved and ran' $$;
comment on function mcp.approve_me() is '@mcp {"approval": true}';
revoke execute on function mcp.pages(), mcp.asks(), mcp.approve_me() from public;
grant execute on function mcp.pages(), mcp.asks(), mcp.approve_me() to authenticated;

-- one tools/call of Alice's: legacy era unless modern
create function pg_temp.call(tool text, args jsonb, extra jsonb default '{}', modern boolean default false) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args)
      || case when modern then jsonb_build_object('_meta', jsonb_build_object('io.modelcontextprotocol/protocolVersion', '2026-07-28',
                                                    'io.modelcontextprotocol/clientCapabilities', '{"elicitation":{}}'::jsonb))
              else '{}' end || extra),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
-- Alice's genuine tokens, one of each kind
create temp table tokens (kind text primary key, token text not null);
insert into tokens
select 'run handle', pg_temp.call('pages', '{}', '{"_meta":{"io.chumbo/run":true}}') #>> '{result,_meta,io.chumbo/run}'
union all
select 'page cursor', pg_temp.call('pages', '{}') #>> '{result,structuredContent,next_cursor}'
union all
select 'requestState', pg_temp.call('asks', '{}', '{}', true) #>> '{result,requestState}'
union all
select 'approval token', pg_temp.call('approve_me', '{}') #>> '{result,_meta,io.chumbo/confirmation,token}';
select kind, token ~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$' as signed_token, array(select jsonb_object_keys(regress.token_payload(token)) order by 1) as payload_keys
  from tokens order by kind;

-- what a token presented in a slot gets (first line, trace id masked)
create function pg_temp.present(slot text, token text) returns text language sql as $$
  select regexp_replace(split_part(coalesce(r #>> '{error,message}', r #>> '{result,content,0,text}'), E'\n', 1),
                        ' ?\(trace id [0-9a-f]+\)', '', 'g')
    from (select case slot
      when 'run handle'     then pg_temp.call('pages', '{}', jsonb_build_object('_meta', jsonb_build_object('io.chumbo/run', token)))
      when 'page cursor'    then pg_temp.call('pages', jsonb_build_object('cursor', token))
      when 'requestState'   then pg_temp.call('asks', '{}', jsonb_build_object('requestState', token,
                                   'inputResponses', '{"name":{"action":"accept","content":{"name":"Eve"}}}'::jsonb), true)
      when 'approval token' then pg_temp.call('approve_me', jsonb_build_object('_chumbo_confirm', token)) end) c(r) $$;
-- garbage: a well-formed token that chumbo did not sign
select regress.b64url(convert_to('{"p":"alice"}', 'UTF8')) || '.' || regress.b64url(sha256('garbage')) as garbage \gset
select slot, pg_temp.present(slot, :'garbage') as garbage_gets
  from (values ('run handle'), ('page cursor'), ('requestState'), ('approval token')) s(slot) order by slot;

-- every genuine token in every other slot: the garbage answer
select t.kind as token, s.kind as presented_as, pg_temp.present(s.kind, t.token) = pg_temp.present(s.kind, :'garbage') as same_as_garbage
  from tokens t cross join tokens s where t.kind <> s.kind order by 2, 1;

-- how each kind signs, with the real key
create function pg_temp.sign(kind text, payload bytea) returns text language sql as $$
  select split_part(regress.sign_token(case kind when 'requestState' then 'request state' else kind end, payload), '.', 2) $$;
create function pg_temp.resigned(token text, as_kind text) returns text language sql as $$
  select split_part(token, '.', 1) || '.' || pg_temp.sign(as_kind, regress.b64url_decode(split_part(token, '.', 1))) $$;
-- the emulation is exact: each token signed again as its own kind is the token
select kind, pg_temp.resigned(token, kind) = token as reproduced from tokens order by kind;
-- without the labels (each payload signed the way the slot's kind signs): past the integrity
-- check, another answer than garbage's, except in the run-handle slot
select t.kind as payload_of, s.kind as signed_and_presented_as,
       pg_temp.present(s.kind, pg_temp.resigned(t.token, s.kind)) = pg_temp.present(s.kind, :'garbage') as same_as_garbage,
       pg_temp.present(s.kind, pg_temp.resigned(t.token, s.kind)) as answer
  from tokens t cross join tokens s where t.kind <> s.kind order by 2, 1;

-- and each genuine token still works where it belongs (none of the above consumed one)
select 'run handle' as kind, pg_temp.call('pages', '{}', jsonb_build_object('_meta', jsonb_build_object('io.chumbo/run', token))) #> '{result,structuredContent,rows}' as works
  from tokens where kind = 'run handle'
union all
select 'page cursor', pg_temp.call('pages', jsonb_build_object('cursor', token)) #> '{result,structuredContent,rows}' from tokens where kind = 'page cursor'
union all
select 'requestState', to_jsonb(pg_temp.call('asks', '{}', jsonb_build_object('requestState', token,
         'inputResponses', '{"name":{"action":"accept","content":{"name":"Ann"}}}'::jsonb), true) #>> '{result,content,0,text}')
  from tokens where kind = 'requestState'
union all
select 'approval token', to_jsonb(pg_temp.call('approve_me', jsonb_build_object('_chumbo_confirm', token)) #>> '{result,content,0,text}')
  from tokens where kind = 'approval token';
rollback;
