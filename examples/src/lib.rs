//! Code shared by the runnable examples in `examples/` and their tests.
#![deny(missing_docs)]

pub mod args;
pub mod capture;
pub mod cluster;
pub mod metrics;
pub mod pubsub;
pub mod takeover;
