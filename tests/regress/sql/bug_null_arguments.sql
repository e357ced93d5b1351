-- Every function of chumbo's SQL API (not its _internals) that is not STRICT, called with NULL for each argument,
-- answers or refuses by name: never pgrx's "argument N must not be null", a syntax error of SQL
-- built from a NULL, or an internal error (XX000). chumbo.log and chumbo.progress are called from
-- tool code, where such an error became "Internal error while running the capability"; and
-- chumbo.progress sent NaN and infinity as a progress of null.
begin;
create function pg_temp.with_nulls() returns table (function text, outcome text) language plpgsql as $$
declare
  f record;
  call text;
  state text;
  message text;
begin
  for f in select p.oid::regprocedure::text as signature, p.oid
             from pg_proc p
            where p.pronamespace = 'chumbo'::regnamespace and not p.proisstrict and p.prokind = 'f'
              and p.proname !~ '^_' -- chumbo's own internals (each caller guards what it passes)
              and p.prorettype not in ('trigger'::regtype, 'event_trigger'::regtype)
            order by 1 loop
    call := format('select %s(%s)', f.oid::regproc,
                   (select string_agg('null::' || format_type(t, null), ', ')
                      from unnest((select proargtypes from pg_proc where oid = f.oid)::oid[]) t));
    begin
      execute call;
      function := f.signature; outcome := 'answered';
    exception when others then
      get stacked diagnostics state = returned_sqlstate, message = message_text;
      function := f.signature; outcome := state || ' ' || message;
    end;
    return next;
  end loop;
end $$;
-- the class: none of these
select function, outcome from pg_temp.with_nulls()
 where outcome ~ 'must not be null$' and outcome !~ ': \w+ must not be null$'
    or outcome ~ '^(42601|XX000) ';
-- the public API's refusals, each naming what is missing
select function, outcome from pg_temp.with_nulls()
 where function in ('chumbo.log(text,jsonb,text)', 'chumbo.progress(double precision,double precision,text)',
                    'chumbo.content_resource_link(text,text,text,text)',
                    'chumbo.create_api_key(text,text[],text,timestamp with time zone)', 'chumbo.grant_edge(regrole,boolean)');
-- chumbo.log takes SQL NULL data as JSON null; chumbo.progress refuses what JSON cannot hold
\set VERBOSITY terse
savepoint s;
select chumbo.log('info', null);
select chumbo.progress('NaN');
rollback to s;
select chumbo.progress(1, 'Infinity');
rollback to s;
select chumbo.progress(1, 2, 'half');
-- a NULL inside an array argument, named too
select chumbo.create_api_key('authenticated', array['read', null]);
rollback to s;
select length(chumbo.create_api_key('authenticated', null)) > 20 as key_without_scopes;
rollback;
