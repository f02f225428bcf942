//! fRPC's benchmark method with tonic as the peer: one proto, one echo function, served by frpc,
//! tonic and a raw framed echo. The `frpc-bench` program runs the matrix with servers in child
//! processes; `benches/rpc.rs` runs a few cells under criterion.
//!
//! - [`frameworks`]: the servers and load-generating clients, one file per framework.
//! - [`workload`]: cells, the measured window, the client loops.
//! - [`pool`]: a cell's clients, connected, warmed up and driven together.
//! - [`matrix`]: the matrix run's options and cells, samples interleaved across frameworks.
//! - [`serve`]: the `serve` subcommand and the child processes that run it.
//! - [`load`]: the `load` subcommand, one cell against any server of the proto.
//! - [`cpu`]: CPU time per process from procfs, the server's and the clients' per call.
//! - [`stats`]: median, quartiles, paired ratios, changes beyond the spread.
//! - [`report`]: rows with medians and spreads, the table, JSON and CSV.
//! - [`compare`]: `--baseline`, a run compared with an earlier one.
//! - [`chart`]: the SVG chart.
//! - [`stream`]: the `stream` subcommand, streaming throughput with and without flow control.

pub mod chart;
pub mod compare;
pub mod cpu;
pub mod frameworks;
pub mod load;
pub mod matrix;
pub mod pool;
pub mod report;
pub mod serve;
pub mod stats;
pub mod stream;
pub mod workload;
