//! Code shared by the runnable examples in `examples/` and their tests.

pub mod pubsub;
