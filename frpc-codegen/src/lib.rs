//! Code generation for frpc: `.proto` files → prost structs + polyglot codecs + async service
//! traits, servers and clients, byte-compatible with Go fRPC.
//!
//! ```no_run
//! // build.rs
//! # #[cfg(feature = "compile")]
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     frpc_codegen::compile(&["proto/echo.proto"], &["proto"])?;
//!     // or, configured:
//!     frpc_codegen::configure()
//!         .bytes(["."]) // every `bytes` field as `bytes::Bytes`
//!         .build_client(false)
//!         .compile(&["proto/echo.proto"], &["proto"])?;
//!     Ok(())
//! }
//! # #[cfg(not(feature = "compile"))]
//! # fn main() {}
//! ```
//!
//! Then, in the crate: `pub mod echo { frpc::include_proto!("echo"); }`. The generated code
//! names only `::frpc` (and `::core`/`::std`): the user crate needs no prost dependency.
//!
//! Parsing uses protox (no `protoc` needed); prost-build generates the structs, so the same
//! types work with prost and tonic. frpc appends, per package: `impl frpc::codegen::Message`
//! for every message (fields in the three groups of the wire spec), `impl EnumIndex` for every
//! enum (declaration indices), and per service a trait, a `FooServer<T>`, a `FooClient` and a
//! `foo` module of operation numbers.
//!
//! Layout: [`model`] (what is generated, no protox types), `parse` (descriptors → model),
//! [`emit`] (model → Rust), [`naming`] (prost's naming rules), `builder` (the build.rs API).
#![deny(missing_docs)]

#[cfg(feature = "compile")]
mod builder;
pub mod emit;
pub mod model;
pub mod naming;
#[cfg(feature = "compile")]
mod parse;

use std::fmt;
use std::path::PathBuf;

#[cfg(feature = "compile")]
pub use builder::{Builder, GeneratedFile};
pub use emit::Generator;

/// Compiles `protos` (searched in `includes`) into `$OUT_DIR/<package>.rs` with the default
/// configuration.
#[cfg(feature = "compile")]
pub fn compile(
    protos: &[impl AsRef<std::path::Path>],
    includes: &[impl AsRef<std::path::Path>],
) -> Result<(), Error> {
    configure().compile(protos, includes)
}

/// A [`Builder`] with the default configuration (clients and servers on, `Vec<u8>` bytes).
#[cfg(feature = "compile")]
pub fn configure() -> Builder {
    Builder::default()
}

/// Why code generation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A .proto file is missing or invalid: protox's diagnostic (`file:line:col: message`).
    Parse(String),
    /// A proto feature frpc cannot encode (the message names the field or method).
    Unsupported(String),
    /// prost-build failed.
    Prost(std::io::Error),
    /// Writing a generated file failed.
    Io(PathBuf, std::io::Error),
    /// The builder was misconfigured.
    Config(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse(msg) => write!(f, "cannot parse the .proto files: {msg}"),
            Error::Unsupported(msg) => write!(f, "unsupported: {msg}"),
            Error::Prost(err) => write!(f, "prost-build failed: {err}"),
            Error::Io(path, err) => write!(f, "cannot write {}: {err}", path.display()),
            Error::Config(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Prost(err) | Error::Io(_, err) => Some(err),
            _ => None,
        }
    }
}
