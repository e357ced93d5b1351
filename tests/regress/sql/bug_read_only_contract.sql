-- Fixed bug (issue 25, item 5): application functions whose contract is to read ran read-write.
-- A can_execute policy that wrote and then denied kept its write; so did a model_output
-- projection. Policies (visible, can_execute), text renderers, model_output projections and
-- completion functions now run read-only: a write fails (and fails closed: hidden, denied, or an
-- isError), nothing is kept, and the function cannot turn the transaction read-write again.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create table public.side_effects (who text not null);
grant insert, select on public.side_effects to authenticated;
create schema ro_contract;
grant usage on schema ro_contract to authenticated;
create function ro_contract.writes_then_denies(args jsonb) returns boolean language plpgsql as $$
begin insert into public.side_effects values ('can_execute'); return false; end $$;
create function ro_contract.writes_then_shows() returns boolean language plpgsql as $$
begin insert into public.side_effects values ('visible'); return true; end $$;
create function ro_contract.turns_read_write(args jsonb) returns boolean language plpgsql as $$
begin set local transaction_read_only = off; insert into public.side_effects values ('read-write'); return true; end $$;
create function ro_contract.writes_text(rows jsonb) returns text language plpgsql as $$
begin insert into public.side_effects values ('renderer'); return 'rendered'; end $$;
create function ro_contract.writes_projection(v jsonb) returns jsonb language plpgsql as $$
begin insert into public.side_effects values ('model_output'); return '{"n": 1}'; end $$;
create function ro_contract.writes_completion(prefix text) returns setof text language plpgsql as $$
begin insert into public.side_effects values ('completion'); return next 'x'; end $$;
grant execute on all functions in schema ro_contract to authenticated;
create function mcp.denied() returns text language sql as $$ select 'ran' $$;
comment on function mcp.denied() is '@mcp {"can_execute": "ro_contract.writes_then_denies"}';
create function mcp.shown() returns text language sql as $$ select 'ran' $$;
comment on function mcp.shown() is '@mcp {"visible": "ro_contract.writes_then_shows"}';
create function mcp.flipped() returns text language sql as $$ select 'ran' $$;
comment on function mcp.flipped() is '@mcp {"can_execute": "ro_contract.turns_read_write"}';
create function mcp.rendered() returns table (n int) language sql as $$ select 1 $$;
comment on function mcp.rendered() is '@mcp {"text": "ro_contract.writes_text"}';
create function mcp.projected() returns int language sql as $$ select 1 $$;
comment on function mcp.projected() is '@mcp {"model_output": "ro_contract.writes_projection"}';
create function mcp.completed(topic text) returns text language sql as $$ select topic $$;
comment on function mcp.completed(text) is '@mcp {"prompt": true, "completions": {"topic": "ro_contract.writes_completion"}}';
revoke execute on function mcp.denied(), mcp.shown(), mcp.flipped(), mcp.rendered(), mcp.projected(), mcp.completed(text) from public;
grant execute on function mcp.denied(), mcp.shown(), mcp.flipped(), mcp.rendered(), mcp.projected(), mcp.completed(text) to authenticated;
select 'can_execute' as function, regexp_replace(regress.tool(:'alice', 'denied') #>> '{result,content,0,text}', 'trace id [0-9a-f]+', 'trace id <masked>') as answer
union all
select 'visible', (jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') ? 'shown')::text
union all
select 'set transaction_read_only = off', regexp_replace(regress.tool(:'alice', 'flipped') #>> '{result,content,0,text}', 'trace id [0-9a-f]+', 'trace id <masked>')
union all
select 'text renderer', regexp_replace(regress.tool(:'alice', 'rendered') #>> '{result,content,0,text}', 'trace id [0-9a-f]+', 'trace id <masked>')
union all
select 'model_output', regexp_replace(regress.tool(:'alice', 'projected') #>> '{result,content,0,text}', 'trace id [0-9a-f]+', 'trace id <masked>')
union all
select 'completion', regexp_replace(regress.rpc(:'alice', 'completion/complete',
         '{"ref":{"type":"ref/prompt","name":"completed"},"argument":{"name":"topic","value":""}}') #>> '{error,message}',
         'trace id [0-9a-f]+', 'trace id <masked>');
-- nothing any of them wrote was kept
select count(*) as side_effects_kept from public.side_effects;
rollback;
