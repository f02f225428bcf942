//! fRPC's benchmark method with tonic as the peer: one proto, one echo function, served by frpc,
//! tonic and a raw framed echo. The `frpc-bench` program runs the matrix with servers in child
//! processes; `benches/rpc.rs` runs a few cells under criterion.
//!
//! - [`frameworks`]: the servers and load-generating clients, one file per framework.
//! - [`workload`]: cells and messages; the measured window and the client loops come from
//!   the `frpc-load` crate (shared with `frpc bench`), as does [`cpu`], CPU time per process.
//! - [`pool`]: a cell's clients, connected, warmed up and driven together.
//! - [`matrix`]: the matrix run's options and cells, samples interleaved across frameworks.
//! - [`serve`]: the `serve` subcommand and the child processes that run it.
//! - [`load`]: the `load` subcommand, one cell against any server of the proto.
//! - [`stats`]: median, quartiles, paired ratios, changes beyond the spread.
//! - [`report`]: rows with medians and spreads, the table, JSON and CSV.
//! - [`compare`]: `--baseline`, a run compared with an earlier one.
//! - [`chart`]: the SVG chart.
//! - [`stream`]: the `stream` subcommand, streaming throughput with and without flow control.

pub mod chart;
pub mod compare;
pub mod frameworks;
pub mod load;
pub mod matrix;
pub mod pool;
pub mod report;
pub mod serve;
pub mod stats;
pub mod stream;
pub mod workload;

pub use frpc_load::cpu;
