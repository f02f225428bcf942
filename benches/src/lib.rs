//! The benchmark service on frpc, tonic and a raw framed echo, and the load generators that
//! drive them. The `frpc-bench` program runs the matrix; `benches/rpc.rs` runs a few cells
//! under criterion.

pub mod load;
pub mod report;
pub mod service;
