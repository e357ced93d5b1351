-- chumbo 0.3.0 -> 0.4.0. Leaves a 0.3.0 install exactly as a fresh 0.4.0 one
-- (tests/package/upgrade.sh compares the two). One block per change below, each headed by what it is.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.4.0'" to load this file. \quit
