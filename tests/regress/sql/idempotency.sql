-- Exactly-once operations (issue 13, 5): a call of a tool that is not read-only with an
-- idempotency key (_meta "io.chumbo/idempotency-key", or the parameter @mcp idempotency_key
-- names) runs once per (principal, tool, key); a retry with the same arguments gets the stored
-- result without running, other arguments are refused, Bob's same key is his own operation,
-- read-only tools ignore keys, failed calls are not stored (they were rolled back), outcomes
-- expire (idempotency_ttl_seconds, pinned clock) and are pruned.
-- Red if: a retry runs the tool again (writes counted below), a replay differs from the first
-- answer, keys are shared between principals, or an expired outcome still answers.
-- (Concurrent retries and a crash between claim and commit: tests/isolation/specs/idempotency.spec,
-- tests/regress/concurrency_idempotency.sh, and the second part of this file.)
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create schema once;
grant usage on schema once to authenticated;
create table once.calls (id serial primary key, who text default current_setting('request.jwt.claims', true)::jsonb ->> 'sub', title text);
grant select, insert on once.calls to authenticated;
grant usage on sequence once.calls_id_seq to authenticated;
create function mcp.once_add(title text, request_id text default null) returns jsonb language plpgsql as $$
begin
  if title = 'fail' then raise exception 'refused: %', title; end if;
  insert into once.calls (title) values (once_add.title);
  return jsonb_build_object('title', title, 'writes', (select count(*) from once.calls));
end $$;
comment on function mcp.once_add(text, text) is 'Adds a call. @mcp {"idempotency_key": "request_id"}';
create function mcp.once_soft_error(title text) returns chumbo.tool_result language plpgsql as $$
begin
  insert into once.calls (title) values (once_soft_error.title);
  return chumbo.tool_result(jsonb_build_array(chumbo.content_text('soft error ' || (select count(*) from once.calls))), null, true);
end $$;
create function mcp.once_peek() returns bigint language sql stable as $$ select nextval('once.calls_id_seq') $$;
create function mcp.once_badkey(title text) returns text language sql as $$ select title $$;
comment on function mcp.once_badkey(text) is 'x @mcp {"idempotency_key": "nope"}';
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;

create function pg_temp.call(claims jsonb, tool text, args jsonb, key jsonb) returns jsonb language sql as $$
  select regress.rpc(claims, 'tools/call', jsonb_build_object('name', tool, 'arguments', args,
    '_meta', jsonb_build_object('io.chumbo/idempotency-key', key))) $$;
create function pg_temp.shown(r jsonb) returns text language sql as $$
  select coalesce(case when (r #>> '{result,isError}')::boolean then 'error: ' else 'ok: ' end
                  || regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', '')
                  || coalesce(' [' || (r #>> '{result,_meta,io.chumbo/idempotency,status}') || ']', ''),
                  'rpc error ' || (r #>> '{error,code}') || ': ' || (r #>> '{error,message}')) $$;

-- first call runs, the retry is answered from the stored outcome (same text, marked replayed)
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', '"k1"')) as first;
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', '"k1"')) as retry;
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', '"k1"')) as retry_again;
select count(*) as writes_after_three_calls from once.calls;
-- the same key with other arguments is refused; another key is another operation
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"b"}', '"k1"')) as other_arguments;
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', '"k2"')) as other_key;
-- Bob's k1 is his own operation
select pg_temp.shown(pg_temp.call(:'bob', 'once_add', '{"title":"a"}', '"k1"')) as bob_same_key;
select pg_temp.shown(pg_temp.call(:'bob', 'once_add', '{"title":"a"}', '"k1"')) as bob_retry;
select who, count(*) from once.calls group by who order by who;
-- the declared argument is a key too (and a number key is its text)
select pg_temp.shown(regress.tool(:'alice', 'once_add', '{"title":"c","request_id":"r-1"}')) as declared_key;
select pg_temp.shown(regress.tool(:'alice', 'once_add', '{"title":"c","request_id":"r-1"}')) as declared_retry;
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"d"}', '7')) as number_key,
       pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"d"}', '7')) as number_retry;
-- without a key every call runs
select pg_temp.shown(regress.tool(:'alice', 'once_add', '{"title":"e"}')) as no_key_1,
       pg_temp.shown(regress.tool(:'alice', 'once_add', '{"title":"e"}')) as no_key_2;
-- invalid keys
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', '{"x":1}')) as object_key,
       pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', '""')) as empty_key,
       pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"a"}', to_jsonb(repeat('k', 256)))) as long_key;
-- a failed call was rolled back and is not stored: its retry runs (and fails) again
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"fail"}', '"k-fail"')) as failed,
       pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"fail"}', '"k-fail"')) as failed_retry;
-- a tool's own isError result kept its writes: it is stored and replayed
select pg_temp.shown(pg_temp.call(:'alice', 'once_soft_error', '{"title":"s"}', '"k-soft"')) as soft,
       pg_temp.shown(pg_temp.call(:'alice', 'once_soft_error', '{"title":"s"}', '"k-soft"')) as soft_retry;
-- a read-only tool ignores the key (a retry runs it again)
select pg_temp.shown(pg_temp.call(:'alice', 'once_peek', '{}', '"k-peek"')) <>
       pg_temp.shown(pg_temp.call(:'alice', 'once_peek', '{}', '"k-peek"')) as read_only_runs_again;
-- what is stored: digests, never the key or the principal's subject
select tool, length(key_digest) as key_digest_len, args_digest <> '' as has_args_digest, principal !~ 'aaaaaaaa' as no_subject
  from chumbo.idempotency_outcomes where tool like 'once_%' order by tool, created_at limit 1;
select count(*) as stored from chumbo.idempotency_outcomes where tool like 'once_%';
-- a declared key that is not a parameter hides the tool (doctor names it)
select pg_temp.shown(regress.tool(:'alice', 'once_badkey', '{"title":"x"}')) as bad_declaration;
select function, state, reasons from chumbo.doctor() where function like '%once_badkey%';

-- expiry: the pinned clock moves past idempotency_ttl_seconds; the outcome no longer answers,
-- the call runs again, and expired outcomes are pruned as new ones are stored
select chumbo.configure('{"idempotency_ttl_seconds": 60}') is not null as configured;
set local chumbo.pinned_now = '2030-01-01 00:00:00+00';
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"x"}', '"k-exp"')) as before_expiry;
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"y"}', '"k-exp-2"')) as other_before_expiry;
set local chumbo.pinned_now = '2030-01-01 00:00:59+00';
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"x"}', '"k-exp"')) as within_ttl;
set local chumbo.pinned_now = '2030-01-01 00:01:01+00';
select pg_temp.shown(pg_temp.call(:'alice', 'once_add', '{"title":"x"}', '"k-exp"')) as after_ttl;
select count(*) as expired_left from chumbo.idempotency_outcomes where expires_at <= chumbo.now();
rollback;

-- A crash between claim and commit leaves no phantom claim. Backend A (a dblink connection)
-- calls the tool with key k-crash in an open transaction: the tool has run, the claim is held,
-- nothing is committed. Meanwhile this session's retry is told "in progress". A is killed
-- (pg_terminate_backend): its writes and its claim are gone, and the retry now runs, once.
-- Committed fixture (A must see it), dropped at the end.
create schema once_crash;
create table once_crash.calls (n int);
grant usage on schema once_crash to authenticated;
grant insert, select on once_crash.calls to authenticated;
create function mcp.once_crash() returns bigint language sql as $$ insert into once_crash.calls values (1); select count(*) from once_crash.calls $$;
revoke execute on function mcp.once_crash() from public;
grant execute on function mcp.once_crash() to authenticated;
\set req '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"once_crash","arguments":{},"_meta":{"io.chumbo/idempotency-key":"k-crash"}}}'
select dblink_connect('a', format('host=127.0.0.1 port=%s dbname=%s user=postgres', current_setting('port'), current_database())) as connected;
select dblink_exec('a', 'begin');
select r::jsonb #>> '{result,content,0,text}' as a_ran
  from dblink('a', format('select chumbo.handle(%L::jsonb, %L::jsonb)::text', :'req', :'alice')) as t(r text);
select chumbo.handle(:'req', :'alice') #>> '{result,content,0,text}' as while_a_holds_it;
select pg_terminate_backend((select pid from dblink('a', 'select pg_backend_pid()') as t(pid int)), 30000) as a_killed;
select chumbo.handle(:'req', :'alice') #>> '{result,content,0,text}' as after_crash;
select chumbo.handle(:'req', :'alice') #>> '{result,_meta,io.chumbo/idempotency,status}' as then_replayed;
select count(*) as writes from once_crash.calls;
do $$ begin perform dblink_disconnect('a'); exception when others then null; end $$;
delete from chumbo.idempotency_outcomes where tool = 'once_crash';
drop function mcp.once_crash();
drop schema once_crash cascade;
