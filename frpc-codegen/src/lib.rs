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
//!         .extern_path(".money", "::money_types") // already generated elsewhere
//!         .include_file("protos.rs") // one file nesting every package
//!         .compile(&["proto/echo.proto"], &["proto"])?;
//!     Ok(())
//! }
//! # #[cfg(not(feature = "compile"))]
//! # fn main() {}
//! ```
//!
//! Then, in the crate: `pub mod echo { frpc::include_proto!("echo"); }` (a package segment
//! that is a Rust keyword is raw there too: `package type.async;` is
//! `include_proto!("r#type.r#async")`, as with prost and tonic). The generated code names only
//! `::frpc` (and `::core`/`::std`), so it compiles without a prost dependency; code of yours
//! that names a well-known type (`prost_types::Timestamp`) needs `prost-types = "0.14"`, and
//! `bytes::Bytes` fields (`bytes(..)`) need `bytes = "1"` (the README's *Well-known types*
//! has the table).
//!
//! Parsing uses protox (no `protoc` needed); prost-build generates the structs, so the same
//! types work with prost and tonic. frpc appends, per package: `impl frpc::codegen::Message`
//! for every message (fields in the three groups of the wire spec), `impl EnumIndex` for every
//! enum (declaration indices), and per service a trait, a `FooServer<T>`, a `FooClient` and a
//! `foo` module of operation numbers.
//!
//! Layout: [`model`] (what is generated, no protox types), `parse` (descriptors → model),
//! `comments` (proto comments → doc comments rustdoc reads as text), [`emit`] (model → Rust),
//! [`naming`] (prost's naming rules), `builder` (the build.rs API).
#![deny(missing_docs)]

#[cfg(feature = "compile")]
mod builder;
#[cfg(feature = "compile")]
mod comments;
pub mod emit;
pub mod model;
pub mod naming;
#[cfg(feature = "compile")]
mod parse;

use std::path::PathBuf;

#[cfg(feature = "compile")]
pub use builder::{Builder, GeneratedFile};
pub use emit::Generator;
pub use model::OperationNumbering;
/// The descriptor types [`Builder::compile_fds`] takes (prost-types, the version prost-build
/// uses).
#[cfg(feature = "compile")]
pub use prost_types;

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

/// Why code generation failed. Every message names the .proto file, element or builder option
/// at fault.
///
/// `{:?}` prints the message, as `{}` does: a `build.rs` whose `main` returns the error shows
/// `Error: cannot parse the .proto files: echo.proto:5:1: …` rather than the variant's fields
/// (`{:#?}` still shows them).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A .proto file is missing or invalid: protox's diagnostic (`file:line:col: message`).
    #[error("cannot parse the .proto files: {0}")]
    Parse(String),
    /// A proto feature frpc cannot encode (the message names the field or method).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// prost-build failed.
    #[error("prost-build failed: {0}")]
    Prost(#[source] std::io::Error),
    /// Writing a generated file failed.
    #[error("cannot write {path}: {err}", path = .0.display(), err = .1)]
    Io(PathBuf, #[source] std::io::Error),
    /// The builder was misconfigured.
    #[error("{0}")]
    Config(String),
    /// Two items of one generated package module would have the same Rust name: a proto
    /// element and an item frpc generates (a service's trait, `…Server`, `…Client` or
    /// operation-number module), or two generated items.
    #[error(
        "{first} collides with {second}: both are `{name}` in the Rust module of {}",
        package_desc(package)
    )]
    Collision {
        /// The proto package whose module holds both (empty for none).
        package: String,
        /// The Rust name both would take (`StoreSvcClient`).
        name: String,
        /// The first element, as written in the .proto (``message `pkg.StoreSvcClient` ``).
        first: String,
        /// The second one (``the client generated for service `pkg.StoreSvc` ``).
        second: String,
    },
}

fn package_desc(package: &str) -> String {
    if package.is_empty() {
        "the files without a package".to_string()
    } else {
        format!("package `{package}`")
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !f.alternate() {
            return std::fmt::Display::fmt(self, f);
        }
        match self {
            Error::Parse(text) => f.debug_tuple("Parse").field(text).finish(),
            Error::Unsupported(text) => f.debug_tuple("Unsupported").field(text).finish(),
            Error::Prost(err) => f.debug_tuple("Prost").field(err).finish(),
            Error::Io(path, err) => f.debug_tuple("Io").field(path).field(err).finish(),
            Error::Config(text) => f.debug_tuple("Config").field(text).finish(),
            Error::Collision {
                package,
                name,
                first,
                second,
            } => f
                .debug_struct("Collision")
                .field("package", package)
                .field("name", name)
                .field("first", first)
                .field("second", second)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_the_message_for_build_scripts() {
        let err = Error::Parse("echo.proto:5:1: expected ';' or '{', but found '}'".into());
        assert_eq!(
            format!("{err:?}"),
            "cannot parse the .proto files: echo.proto:5:1: expected ';' or '{', but found '}'"
        );
        assert_eq!(format!("{err:?}"), err.to_string());
        assert!(format!("{err:#?}").starts_with("Parse(\n"), "{err:#?}");
        let collision = Error::Collision {
            package: "dep".into(),
            name: "SvcClient".into(),
            first: "message `dep.SvcClient`".into(),
            second: "the client generated for service `dep.Svc`".into(),
        };
        assert_eq!(
            format!("{collision:?}"),
            "message `dep.SvcClient` collides with the client generated for service `dep.Svc`: \
             both are `SvcClient` in the Rust module of package `dep`"
        );
        assert!(format!("{collision:#?}").contains("name: \"SvcClient\""));
    }
}
