-- One hit on the run's bucket (limit :limit per window; the window is ~31 years, so never crossed),
-- after the barrier lock :barrier (concurrency_state.sh holds it until every client waits on it).
insert into state_conc.hits (result)
select chumbo._rate_hit('conc-' || :run, 1000000000, :limit) from (select pg_advisory_xact_lock_shared(:barrier)) b;
