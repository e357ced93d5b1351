-- One hit on the run's bucket (limit :limit per window; the window is ~31 years, so never crossed).
insert into state_conc.hits (result) select chumbo._rate_hit('conc-' || :run, 1000000000, :limit);
