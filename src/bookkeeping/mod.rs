//! What chumbo records around calls: in-flight slots, rate limits and the audit ([ledger]), the
//! queue that writes read-only calls' audit rows from a background worker ([audit_queue]), and run
//! handles ([runs]).

pub mod audit_queue;
pub mod ledger;
pub mod runs;
