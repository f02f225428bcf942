//! The transport floor: one Frisbee connection's tasks ([`connection`]), its read side cutting
//! frames ([`frames`]), its write side with a direct path ([`writer`]), handing its socket back
//! ([`handback`]) and dialling or binding with errors naming the address ([`net`]). It knows
//! packets and a dispatch trait, nothing of calls or services.

pub(crate) mod connection;
pub(crate) mod frames;
pub(crate) mod handback;
pub(crate) mod net;
pub(crate) mod writer;
