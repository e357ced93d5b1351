-- What the HTTP edge's login role may do: chumbo.grant_edge, and the JWKS courier.

-- The JWKS courier: an edge that fetches the issuer's keys hands them over here. Whoever may
-- call this decides which keys sign valid tokens, so only the owner can turn it on (grant_edge
-- with jwks_courier => true), only with a configured issuer, and every change is audited.
create function chumbo.set_jwks(jwks jsonb) returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    before jsonb;
begin
    if jwks is null or jsonb_typeof(jwks->'keys') is distinct from 'array' then
        raise exception 'chumbo.set_jwks expects a JWKS object {"keys": [...]}';
    end if;
    if coalesce(jsonb_array_length((select value->'jwt_issuers' from chumbo.settings)), 0) = 0 then
        raise exception 'chumbo.set_jwks: no issuer is configured (chumbo.configure jwt_issuers)';
    end if;
    select value->'jwks' into before from chumbo.settings;
    if before is not distinct from jwks then
        return;
    end if;
    update chumbo.settings set value = value || jsonb_build_object('jwks', jwks);
    insert into chumbo.audit_events (trace_id, era, method, capability, principal, outcome, duration_ms, bytes, detail)
    values (encode(chumbo._new_secret(), 'hex'), 'sql', 'chumbo.set_jwks', null, session_user::text, 'jwks changed', 0,
            octet_length(jwks::text),
            jsonb_build_object('kids', (select jsonb_agg(k->'kid') from jsonb_array_elements(jwks->'keys') k),
                               'previous_kids', (select jsonb_agg(k->'kid') from jsonb_array_elements(before->'keys') k),
                               'sha256', encode(sha256(convert_to(jwks::text, 'UTF8')), 'hex')));
end $$;
revoke all on function chumbo.set_jwks(jsonb) from public;
comment on function chumbo.set_jwks(jsonb) is
  'Replace the JWKS used to verify bearer tokens (the JWKS courier: an edge refreshing it from the issuer). Audited.';

-- The edge's login role gets exactly what it needs, never superuser: chumbo.http(_parts), and the JWKS
-- courier only when the owner asks for it. No chumbo.handle (it takes claims on trust), no
-- membership in anon/authenticated (capabilities run as the caller's role without it).
create function chumbo.grant_edge(edge_role regrole, jwks_courier boolean default false) returns void
language plpgsql as $$
declare
    member text;
begin
    if edge_role is null then
        raise exception 'chumbo.grant_edge: edge_role must not be null' using errcode = 'null_value_not_allowed';
    end if;
    execute format('grant usage on schema chumbo to %s', edge_role);
    execute format('grant execute on function chumbo.http(jsonb) to %s', edge_role);
    execute format('grant execute on function chumbo.http_parts(text, text) to %s', edge_role);
    -- the read path on a replicated database (sql/replication.sql)
    perform chumbo._grant_edge_replication(edge_role);
    execute format('revoke execute on function chumbo.handle(jsonb, jsonb) from %s', edge_role);
    if jwks_courier then
        execute format('grant execute on function chumbo.set_jwks(jsonb) to %s', edge_role);
    else
        execute format('revoke execute on function chumbo.set_jwks(jsonb) from %s', edge_role);
    end if;
    -- earlier versions made the edge a member of these; it must not be one
    for member in
        select r.rolname from pg_auth_members m join pg_roles r on r.oid = m.roleid
         where m.member = edge_role and r.rolname in ('anon', 'authenticated', 'service_role')
    loop
        execute format('revoke %I from %s', member, edge_role);
        raise notice 'chumbo.grant_edge: revoked membership in % from %', member, edge_role;
    end loop;
end $$;
revoke all on function chumbo.grant_edge(regrole, boolean) from public;
comment on function chumbo.grant_edge(regrole, boolean) is
  'Give the HTTP edge''s login role what it needs: usage on schema chumbo and execute on chumbo.http and chumbo.http_parts; with jwks_courier => true also chumbo.set_jwks.';

-- The PostgREST entry (POST /rest/v1/rpc/mcp runs chumbo.mcp as the role of the caller's JWT) is
-- off until the owner turns it on. chumbo.mcp takes its caller from request.jwt.claims, which
-- PostgREST sets after verifying the token, but which any session that can become one of these
-- roles (a login granted `authenticated`, a SQL editor) can set itself: turning the entry on
-- means trusting every such session as PostgREST is trusted. Granted to the allowed_roles that
-- exist (default anon and authenticated; chumbo.mcp answers anon with 401 unless auth_mode is
-- public); enabled => false revokes it from them.
create function chumbo.grant_postgrest(enabled boolean default true) returns setof text
language plpgsql as $$
declare
    role_name text;
begin
    if enabled then
        for role_name in
            select r.rolname from pg_catalog.pg_roles r
             where r.rolname in (select jsonb_array_elements_text(coalesce(
                       (select s.value -> 'allowed_roles' from chumbo.settings s), '["anon", "authenticated"]')))
             order by r.rolname
        loop
            execute format('grant execute on function chumbo.mcp(jsonb) to %I', role_name);
            return next role_name;
        end loop;
    else
        -- everyone it was granted to, whatever allowed_roles says now
        for role_name in
            select a.grantee::regrole::text
              from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             where p.oid = 'chumbo.mcp(jsonb)'::regprocedure and a.grantee <> p.proowner and a.grantee <> 0
             order by 1
        loop
            execute format('revoke execute on function chumbo.mcp(jsonb) from %s', role_name);
            return next role_name;
        end loop;
    end if;
end $$;
revoke all on function chumbo.grant_postgrest(boolean) from public;
comment on function chumbo.grant_postgrest(boolean) is
  'Turn the PostgREST entry chumbo.mcp on (or off) for the allowed roles; returns the roles changed. Off by default.';
