//! The transport floor: one Frisbee connection's tasks ([`connection`]), its write side with a
//! direct path ([`writer`]) and handing its socket back ([`handback`]). It knows packets and a dispatch trait, nothing of calls or services.

pub(crate) mod connection;
pub(crate) mod handback;
pub(crate) mod writer;
