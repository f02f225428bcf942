//! The calls floor: what turns packets into calls and back, on top of the transport. The
//! client's in-flight table ([`client`]), the server's dispatch and concurrency modes
//! ([`server`]), streams ([`stream`]), the credit they give back ([`credit`]) and the bytes
//! they may buffer ([`budget`]), a draining connection's notice to its client ([`drain`]), the ids given up and held
//! ([`held`]), raw packets
//! ([`raw`]), the slot unary handlers run in ([`slot`]), the extensions beyond fRPC
//! ([`ext`]) and the choice of a message's encoding ([`codec`]). Nothing here knows a service.

pub(crate) mod budget;
pub(crate) mod client;
pub(crate) mod codec;
pub(crate) mod credit;
pub(crate) mod drain;
pub(crate) mod ext;
pub(crate) mod held;
pub(crate) mod raw;
pub(crate) mod server;
pub(crate) mod slot;
pub(crate) mod stream;
