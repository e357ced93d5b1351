-- Claim (session::relax_commit_for_bookkeeping, ledger::rate_hit): a request that only read
-- commits asynchronously although chumbo wrote its own bookkeeping (the rate-limit hit, the audit
-- row), so a read pays no WAL flush; WAL written by anything else in the same transaction
-- (before the request, by the call, by a later call of the same statement) keeps the commit
-- synchronous, so audit rows and data of a call that wrote are as durable as ever. No begin here:
-- each statement is its own transaction (inside a block nothing is relaxed, see surface_and_audit.sql), and
-- synchronous_commit is read in the same statement after the call(s) (materialized CTEs run
-- first). Settings, rows and objects made here are removed at the end.
-- The fixture is committed (no begin ... rollback) and dropped at the end.
select regress.fixture_tools('list_projects', 'rename_project') as fixture;
select value as saved_settings from chumbo.settings \gset
select coalesce(max(id), 0) as audit_before from chumbo.audit_events \gset
select coalesce(jsonb_agg(bucket), '[]') as buckets_before from chumbo.rate_counters \gset
-- the rate windows below are fixed: time is pinned for the session (chumbo.now(), superuser)
set chumbo.pinned_now = '2026-01-01 00:00:30+00';
-- public mode: a request limit (600 a minute) by default; audit on
select chumbo.configure('{"auth_mode":"public","audit":true,"rate_limit_per_minute":null}') ->> 'auth_mode' as mode;
create function mcp.counted_read() returns text language sql stable as $$ select 'read' $$;
comment on function mcp.counted_read() is 'Reads. @mcp {"rateLimit": {"perMinute": 1000}}';
grant execute on function mcp.counted_read() to anon;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.http(body text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'client', '192.0.2.61',
    'headers', '{"mcp-protocol-version":"2025-11-25"}'::jsonb, 'body', body)) $$;
select current_setting('synchronous_commit') as default_commit;
-- the first request after the changes above rebuilds the cached registry
select pg_temp.http('{"jsonrpc":"2.0","id":1,"method":"ping"}') -> 'status' as warm_up;

-- reads through chumbo.http: the request's rate-limit hit and audit row are written (the
-- transaction has an id), and the commit is asynchronous
with r as materialized (select pg_temp.http('{"jsonrpc":"2.0","id":2,"method":"tools/list"}') a)
select a -> 'status' as status, txid_current_if_assigned() is not null as bookkeeping_written,
       current_setting('synchronous_commit') as commit from r;
-- a tool with its own rate limit: two hits counted, still asynchronous
with r as materialized (select pg_temp.http('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"counted_read"}}') a)
select a #>> '{body,result,content,0,text}' as result, current_setting('synchronous_commit') as commit from r;
-- a request refused over its limit (429) is audited with a relaxed commit too
select chumbo.configure('{"rate_limit_per_minute":1}') -> 'rate_limit_per_minute' as request_limit;
select pg_temp.http('{"jsonrpc":"2.0","id":4,"method":"ping"}') -> 'status' as over_limit;
with r as materialized (select pg_temp.http('{"jsonrpc":"2.0","id":5,"method":"ping"}') a)
select a -> 'status' as status, current_setting('synchronous_commit') as commit from r;
select chumbo.configure('{"rate_limit_per_minute":null}') -> 'rate_limit_per_minute' as request_limit;
-- the rows really are there, one audit row per request
select count(*) as audit_rows from chumbo.audit_events where id > :audit_before;

-- a call that writes (alice renames her project to the name it already has) commits synchronously
select name as project_name from public.projects where id = 'a1000000-0000-4000-8000-000000000001' \gset
\set rename '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rename_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000001","name":"' :project_name '"}}}'
select :'rename' as rename \gset
with r as materialized (select chumbo.handle(:'rename', :'alice') a)
select a #> '{result,isError}' as is_error, current_setting('synchronous_commit') as commit from r;
-- a read and then a write in one statement: the write makes the commit synchronous again
with r1 as materialized (select chumbo.handle('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}', :'alice') a),
     r1_commit as materialized (select current_setting('synchronous_commit') as commit from r1),
     r2 as materialized (select (select commit from r1_commit) as after_read, chumbo.handle(:'rename', :'alice') a)
select after_read, a #> '{result,isError}' as is_error, current_setting('synchronous_commit') as after_write from r2;
-- written before the request in the same transaction: synchronous
with w as materialized (update public.projects set name = name where id = 'a1000000-0000-4000-8000-000000000001' returning 1),
     r as materialized (select (select count(*) from w) as updated, chumbo.handle('{"jsonrpc":"2.0","id":8,"method":"tools/list"}', :'alice') a)
select updated, current_setting('synchronous_commit') as commit from r;
-- a caller's own choice is what a relaxed commit goes back to
set synchronous_commit = local;
with r1 as materialized (select chumbo.handle('{"jsonrpc":"2.0","id":9,"method":"tools/list"}', :'alice') a),
     r1_commit as materialized (select current_setting('synchronous_commit') as commit from r1),
     r2 as materialized (select (select commit from r1_commit) as after_read, chumbo.handle(:'rename', :'alice') a)
select after_read, current_setting('synchronous_commit') as after_write from r2;
reset synchronous_commit;

reset chumbo.pinned_now;
drop function mcp.counted_read();
delete from chumbo.audit_events where id > :audit_before;
delete from chumbo.rate_counters where not (:'buckets_before'::jsonb ? bucket);
update chumbo.settings set value = :'saved_settings'::jsonb;
select regress.drop_fixture_projects() as fixture;
