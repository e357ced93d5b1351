//! Who a call runs as: the caller's identity ([principal]), tokens and claims ([auth]), API keys
//! ([apikey]), the switch to the caller's role and everything around it ([session]), and the
//! request settings spliced in for the call ([spliced]).

pub mod apikey;
pub mod auth;
pub mod principal;
pub mod session;
pub mod spliced;
