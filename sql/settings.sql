-- Settings: one jsonb object, changed through chumbo.configure; every change moves the
-- capability version (registry.sql).

-- Settings are a single jsonb object merged over the defaults in Rust (src/settings.rs).
create table chumbo.settings (
    id boolean primary key default true check (id),
    value jsonb not null default '{}'::jsonb check (jsonb_typeof(value) = 'object')
);
insert into chumbo.settings default values;
revoke all on chumbo.settings from public;
create trigger settings_changed after insert or update or delete on chumbo.settings
    for each statement execute function chumbo._settings_changed();

-- Settings changes go through this function (owners only): it validates the merged object.
create function chumbo.configure(settings jsonb) returns jsonb
language plpgsql as $$
declare
    merged jsonb;
begin
    if settings is null or jsonb_typeof(settings) <> 'object' then
        raise exception 'chumbo.configure expects a JSON object';
    end if;
    update chumbo.settings s set value = jsonb_strip_nulls(s.value || chumbo._expand_settings(configure.settings))
    returning s.value into merged;
    perform chumbo._check_settings(merged);
    return chumbo.settings_effective();
end $$;
revoke all on function chumbo.configure(jsonb) from public;
comment on function chumbo.configure(jsonb) is
  'Merge keys into chumbo''s settings (null removes a key; supabase_url also sets the issuer, audience, JWKS URL, oauth mode and require_client_id it implies, unless given) and return the effective settings with secrets redacted.';
