//! fRPC's benchmark method with tonic as the peer: one proto, one echo function, served by frpc,
//! tonic and a raw framed echo. The `frpc-bench` program runs the matrix with servers in child
//! processes; `benches/rpc.rs` runs a few cells under criterion.
//!
//! - [`frameworks`]: the servers and load-generating clients, one file per framework.
//! - [`workload`]: cells, the measured window, the client loops.
//! - [`serve`]: the `serve` subcommand and the child processes that run it.
//! - [`report`]: the table with ratios, JSON, CSV and the SVG chart.

pub mod frameworks;
pub mod report;
pub mod serve;
pub mod workload;
