-- chumbo is installed only in a UTF8 database. In another it went in, and then its texts failed
-- call by call: in a SQL_ASCII database (any bytes are text there) one COMMENT that was not UTF-8
-- made every chumbo.handle raise an internal error ("datums converted to &str should be valid
-- UTF-8"), and in LATIN1 its names and rows would have been read as UTF-8. Now create extension
-- says why and leaves nothing behind, in each encoding that is not UTF8.
drop database if exists chumbo_regress_sql_ascii;
drop database if exists chumbo_regress_latin1;
create database chumbo_regress_sql_ascii encoding 'SQL_ASCII' locale 'C' template template0;
create database chumbo_regress_latin1 encoding 'LATIN1' locale 'C' template template0;
-- (PostgreSQL 18 adds the extension script's lines to the error's context: the error and its hint are what count)
\set SHOW_CONTEXT never

\c chumbo_regress_sql_ascii
create extension chumbo;
select count(*) as chumbo_objects from pg_namespace where nspname in ('chumbo', 'mcp');

\c chumbo_regress_latin1
create extension chumbo;
select count(*) as chumbo_objects from pg_namespace where nspname in ('chumbo', 'mcp');

\c chumbo_regress
drop database chumbo_regress_sql_ascii;
drop database chumbo_regress_latin1;
-- The database the suite runs in is UTF8, and chumbo is there.
select pg_catalog.getdatabaseencoding(), extversion is not null as installed
  from pg_extension where extname = 'chumbo';
