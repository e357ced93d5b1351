-- One idle-stop run over at most 10 sandboxes.
select chumbo.sandbox_idle_stop(10);
