-- chumbo 0.3.0 -> 0.4.0. Leaves a 0.3.0 install exactly as a fresh 0.4.0 one
-- (tests/package/upgrade.sh compares the two). One block per change below, each headed by what it is.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.4.0'" to load this file. \quit

-- Audit table shape: no primary key index, BRIN on `at` (sql/audit.sql; one insert per request).
alter table chumbo.audit_events drop constraint audit_events_pkey;
drop index chumbo.audit_events_at;
create index audit_events_at on chumbo.audit_events using brin (at);
alter table chumbo.audit_events replica identity full;
