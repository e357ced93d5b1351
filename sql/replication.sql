-- Replication (docs/scaling.md): the edge's read path. chumbo.http_admit (primary), chumbo.http_replica
-- (standby) and chumbo.http_audit (primary) are defined in Rust (src/api/replica.rs); the edge's
-- login role gets them from chumbo.grant_edge, through this helper.
create function chumbo._grant_edge_replication(edge_role regrole) returns void
language plpgsql as $$
begin
    execute format('grant execute on function chumbo.http_admit(text, text) to %s', edge_role);
    execute format('grant execute on function chumbo.http_replica(text, text, text) to %s', edge_role);
    execute format('grant execute on function chumbo.http_audit(text, text) to %s', edge_role);
end $$;
revoke all on function chumbo._grant_edge_replication(regrole) from public;
