-- Rate limits per principal: a tool with @mcp {"rateLimit": {"perMinute": 3}} answers an isError
-- result with the retry time on the 4th call of a minute, for Alice only: Bob and another
-- issuer's token with Alice's subject each have their own window; another OAuth client of Alice
-- does not (a user must not get a fresh budget by registering a client).
-- Counters hold digests, never the subject. chumbo._rate_hit as the owner: exactly N per window.
-- Time is pinned (chumbo.now()), so the windows are the test's, not the wall clock's.
begin;
select regress.fixture_tools('list_projects') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set alice_app2 '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated","client_id":"second-app"}'
\set alice_other_iss '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","iss":"https://other.example.com","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function pg_temp.tool(claims jsonb, name text, args jsonb default '{}')
  returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
          'params', jsonb_build_object('name', name, 'arguments', args)), claims) $$;
create function pg_temp.outcome(r jsonb) returns text language sql
  as $$ select case when (r -> 'result' ->> 'isError')::boolean
                    then r -> 'result' -> 'content' -> 0 ->> 'text'
                    else 'ok: ' || (r -> 'result' -> 'content' -> 0 ->> 'text') end $$;
-- the tool records every run, so a refused call that still reached it would show
create table public.echo_runs (n serial, word text);
grant insert on public.echo_runs to authenticated;
grant usage on sequence public.echo_runs_n_seq to authenticated;
create function mcp.limited_echo(word text) returns text language sql
  as $$ insert into public.echo_runs (word) values (word); select word $$;
comment on function mcp.limited_echo(text) is 'Echo, three times a minute. @mcp {"rateLimit": {"perMinute": 3}}';
revoke execute on function mcp.limited_echo(text) from public;
grant execute on function mcp.limited_echo(text) to authenticated;
-- time is pinned (chumbo.now(); set local chumbo.pinned_now: superuser, this transaction only):
-- every call below falls in the fixed window 00:00:00-00:01:00, 30 s before it ends
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select n, pg_temp.outcome(pg_temp.tool(:'alice', 'limited_echo', jsonb_build_object('word', 'alice-' || n))) as alice
  from generate_series(1, 5) n;
select n, pg_temp.outcome(pg_temp.tool(:'bob', 'limited_echo', jsonb_build_object('word', 'bob-' || n))) as bob
  from generate_series(1, 4) n;
select n, pg_temp.outcome(pg_temp.tool(:'alice_app2', 'limited_echo', jsonb_build_object('word', 'app2-' || n))) as alice_second_client
  from generate_series(1, 4) n;
select pg_temp.outcome(pg_temp.tool(:'alice_other_iss', 'limited_echo', '{"word":"other-iss"}')) as other_issuer;
-- a refused call never reaches the function: only the allowed calls ran (the sequence is not
-- transactional, so even a run that was rolled back afterwards would count)
select string_agg(word, ' ' order by n) as runs, (select last_value from public.echo_runs_n_seq) as function_entries
  from public.echo_runs;
-- the last instant of the window is still refused; the next window allows Alice again
set local chumbo.pinned_now = '2026-01-01 00:00:59.999+00';
select pg_temp.outcome(pg_temp.tool(:'alice', 'limited_echo', '{"word":"alice-late"}')) as alice_window_end;
set local chumbo.pinned_now = '2026-01-01 00:01:00+00';
select pg_temp.outcome(pg_temp.tool(:'alice', 'limited_echo', '{"word":"alice-next"}')) as alice_next_window;
select string_agg(word, ' ' order by n) as runs, (select last_value from public.echo_runs_n_seq) as function_entries
  from public.echo_runs where word like 'alice-%';
-- other tools are not limited
select jsonb_path_query_array(pg_temp.tool(:'alice', 'list_projects'), '$.result.structuredContent.rows[*].name') as other_tool;
-- counters: one bucket per tool and principal, all keyed digests
select count(*) as buckets, sum(hits) as hits, bool_and(bucket ~ '^tool:limited_echo:[0-9a-f]{64}$') as digest_buckets,
       bool_and(bucket !~ 'aaaaaaaa|bbbbbbbb') as no_subjects
  from chumbo.rate_counters where bucket like 'tool:limited_echo:%';
-- finished windows are reclaimed, a few per hit
insert into chumbo.rate_counters (bucket, window_start, window_seconds, hits)
  select 'old-' || i, chumbo.now() - interval '2 days', 60, 1 from generate_series(1, 20) i;
select chumbo._rate_hit('regress-reclaimer', 60, 10) = 0 as allowed;
select count(*) as old_windows_left from chumbo.rate_counters where bucket like 'old-%';
-- _rate_hit (the owner's primitive): 0 = allowed, else seconds until the window ends (the hour
-- window 00:00-01:00 at the pinned 00:01:00: 3540 s)
select n, chumbo._rate_hit('regress-bucket', 3600, 2) as result from generate_series(1, 4) n;
select chumbo._rate_hit('regress-other-bucket', 3600, 2) = 0 as other_bucket_allowed;
-- hits with a shorter window never reclaim a longer window that is still running
insert into chumbo.rate_counters (bucket, window_start, window_seconds, hits)
  values ('regress-long', chumbo.now() - interval '10 minutes', 3600, 5);
select chumbo._rate_hit('regress-short-' || n, 60, 10) = 0 as short_hit from generate_series(1, 3) n;
select bucket, hits from chumbo.rate_counters where bucket = 'regress-long';
select count(*) as old_windows_left from chumbo.rate_counters where bucket like 'old-%';
rollback;
