//! The library behind the `frpc` command: polyglot encoding of dynamic messages ([`dynamic`]),
//! schemas from `.proto` files or a reflecting server ([`schema`]), proto3 JSON ([`json`]),
//! streaming calls ([`stream`]), load runs ([`bench`](mod@bench)) and the commands themselves
//! ([`commands`]). See `docs/guide/operating-frpc.md`.
#![deny(missing_docs)]

pub mod bench;
pub mod commands;
pub mod dynamic;
pub mod error;
pub mod json;
pub mod schema;
pub mod stream;
pub mod tls;
