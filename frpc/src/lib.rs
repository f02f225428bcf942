//! frpc: an async RPC framework speaking Go fRPC's wire protocol. The runtime lands in a
//! following change; today it re-exports the wire layer.
#![deny(missing_docs)]

pub use frpc_wire as wire;
