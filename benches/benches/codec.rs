//! Placeholder replaced by the codec benchmark.
fn main() {}
