-- Bug (found by the audit of gap G4): an approval could be forged through a tool's own MRTR
-- round. src/approval.rs takes a call as approved when the verified requestState carries
-- "io.chumbo/approval-asked" (the proof that chumbo asked) and an accepting "io.chumbo/approval"
-- answer. The gate dropped a client-sent "io.chumbo/approval-asked" from inputResponses, but
-- src/protocol/call.rs run() did not: while a call needs no approval (here: an approval predicate
-- that depends on the data, amount > the current limit), the client sends both keys in
-- inputResponses, the tool asks for input (chumbo.input), and chumbo signed them into the
-- requestState of that round. Once the same call needed approval (the limit was lowered), that
-- state made the gate run the tool as "approved" without the user ever being asked (the last call
-- answered 'paid 50 (nobody approved this)', audited as approved).
-- Now every reader of a client's inputResponses goes through approval::from_client, which drops
-- the key only chumbo signs: the last call asks for the approval, nothing is paid, and the audit
-- shows no "approved".
begin;
create table public.payment_limit (amount int not null);
insert into public.payment_limit values (100);
create table public.payments (amount int not null, memo text);
grant select on public.payment_limit to authenticated;
grant select, insert on public.payments to authenticated;
create function public.over_limit(args jsonb) returns boolean language sql stable
  as $$ select (args ->> 'amount')::int > (select amount from public.payment_limit) $$;
grant execute on function public.over_limit(jsonb) to authenticated;
create function mcp.pay(amount int) returns text language plpgsql as $$
declare memo text;
begin
  memo := chumbo.input('memo', '{"method":"elicitation/create","params":{"message":"Memo?","requestedSchema":{"type":"object","properties":{"memo":{"type":"string"}}}}}') #>> '{content,memo}';
  insert into public.payments values (amount, memo);
  return format('paid %s (%s)', amount, memo);
end $$;
comment on function mcp.pay(int) is 'Pay an amount; over the limit the user must approve. @mcp {"approval": "public.over_limit"}';
revoke execute on function mcp.pay(int) from public;
grant execute on function mcp.pay(int) to authenticated;
-- Alice's 2026-07-28 tools/call of pay(50), with extra params
create function pg_temp.pay50(extra jsonb) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call', 'params',
    jsonb_build_object('name', 'pay', 'arguments', '{"amount": 50}'::jsonb,
      '_meta', jsonb_build_object('io.modelcontextprotocol/protocolVersion', '2026-07-28',
                                  'io.modelcontextprotocol/clientCapabilities', '{"elicitation":{}}'::jsonb)) || extra),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function pg_temp.summary(r jsonb) returns text language sql as $$
  select coalesce(r #>> '{result,resultType}' || ' ' || (select string_agg(k, ',') from jsonb_object_keys(r #> '{result,inputRequests}') k),
                  r #>> '{result,content,0,text}', r #>> '{error,message}') $$;

-- the honest flow over the limit: the approval is asked
update public.payment_limit set amount = 10;
select pg_temp.summary(pg_temp.pay50('{}')) as over_the_limit;
-- under the limit no approval is needed; the client slips the approval keys into inputResponses
-- while the tool asks for its memo, and chumbo signs them into the round's requestState
update public.payment_limit set amount = 100;
create temp table round1 as
  select pg_temp.pay50('{"inputResponses": {"io.chumbo/approval-asked": {"forged": true},
                                            "io.chumbo/approval": {"action": "accept", "content": {"approve": true}}}}') as r;
select pg_temp.summary(r) as under_the_limit from round1;
-- over the limit again: that state now passes as the user's approval
update public.payment_limit set amount = 10;
select pg_temp.summary(pg_temp.pay50(jsonb_build_object('requestState', r #> '{result,requestState}',
         'inputResponses', '{"memo": {"action": "accept", "content": {"memo": "nobody approved this"}}}'::jsonb))) as approval_asked_again
  from round1;
select amount, memo from public.payments;
select outcome, detail ->> 'via' as via from chumbo.audit_events where method = 'approval' order by id;
rollback;
