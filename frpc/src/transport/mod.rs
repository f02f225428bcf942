//! The transport floor: one Frisbee connection's tasks ([`connection`]), its read side cutting
//! frames ([`frames`]), a client's read loop its lone caller may drive ([`shared_reader`]), its
//! write side with a direct path ([`writer`]) and its queue held in bytes ([`queue_bytes`]),
//! handing its socket back ([`handback`]) and dialling or binding with errors naming the
//! address ([`net`]). It knows packets and a dispatch trait, nothing of calls or services.

pub(crate) mod connection;
pub(crate) mod frames;
pub(crate) mod handback;
pub(crate) mod net;
pub(crate) mod progress;
pub(crate) mod queue_bytes;
pub(crate) mod shared_reader;
pub(crate) mod writer;
