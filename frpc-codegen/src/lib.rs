//! Code generation for frpc (lands in a following change).
#![deny(missing_docs)]
