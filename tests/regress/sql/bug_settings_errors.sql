-- chumbo.configure names the setting a refusal is about and what it expected. Since numbers keep
-- their text (0.5.0), a number that did not fit its field was refused as only "invalid number",
-- with no setting named; and a zero that would refuse every request (max_body_bytes), every
-- result (max_result_bytes), every row (max_rows) or give list pages of no size (page_size) was
-- taken. A refused change leaves the settings as they were.
begin;
select chumbo.configure('{"page_size": 7}') ->> 'page_size' as page_size;
\set VERBOSITY terse
savepoint s;
select chumbo.configure('{"page_size": -1}');
rollback to s;
select chumbo.configure('{"page_size": 2.5}');
rollback to s;
select chumbo.configure('{"page_size": "10"}');
rollback to s;
select chumbo.configure('{"max_in_flight": 99999999999999999999}');
rollback to s;
select chumbo.configure('{"rate_limit_per_minute": -5}');
rollback to s;
select chumbo.configure('{"audit": "yes"}');
rollback to s;
select chumbo.configure('{"allowed_roles": ["anon", 7]}');
rollback to s;
select chumbo.configure('{"no_such_setting": 1}');
rollback to s;
select chumbo.configure('{"max_body_bytes": 0}');
rollback to s;
select chumbo.configure('{"max_result_bytes": 0}');
rollback to s;
select chumbo.configure('{"max_rows": 0}');
rollback to s;
select chumbo.configure('{"page_size": 0}');
rollback to s;
-- none of them changed anything
select (chumbo.configure('{}') ->> 'page_size')::int as page_size,
       (chumbo.configure('{}') ->> 'max_body_bytes')::int as max_body_bytes;
-- settings an earlier release stored with such a zero still load as they are (not as the
-- defaults): the tools are still listed to a caller the stored settings let in
update chumbo.settings set value = value || '{"page_size": 0, "auth_mode": "public"}';
select jsonb_typeof(chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', '{"content-type":"application/json"}'::jsonb,
         'body', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')) #> '{body,result,tools}') as listed;
select chumbo.settings_effective() ->> 'page_size' as stored_page_size;
-- and the next change says what to mend
select chumbo.configure('{"audit": true}');
rollback to s;
rollback;
