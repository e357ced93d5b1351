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
rollback;
