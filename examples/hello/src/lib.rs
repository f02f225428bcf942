//! The README's example crate. Its library holds no code: under `cargo test --doc` it compiles
//! and runs every Rust block of the guide's chapters (`docs/guide/`) as a doctest. The blocks
//! that show this crate's files are also checked verbatim by `tests/readme.rs`.

/// Each guide chapter with Rust blocks, as the doc comment of a hidden item, so rustdoc runs
/// its blocks (`include_proto!("echo")` finds this crate's `OUT_DIR`).
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../../docs/guide/services-and-clients.md")]
    struct ServicesAndClients;
    #[doc = include_str!("../../../docs/guide/streaming.md")]
    struct Streaming;
    #[doc = include_str!("../../../docs/guide/errors-metadata-deadlines.md")]
    struct ErrorsMetadataDeadlines;
    #[doc = include_str!("../../../docs/guide/middleware-and-health.md")]
    struct MiddlewareAndHealth;
    #[doc = include_str!("../../../docs/guide/many-servers.md")]
    struct ManyServers;
    #[doc = include_str!("../../../docs/guide/go-interop.md")]
    struct GoInterop;
    #[doc = include_str!("../../../docs/guide/schema-evolution.md")]
    struct SchemaEvolution;
    #[doc = include_str!("../../../docs/guide/performance.md")]
    struct Performance;
    #[doc = include_str!("../../../docs/guide/hostile-peers.md")]
    struct HostilePeers;
    #[doc = include_str!("../../../docs/guide/faults-on-the-wire.md")]
    struct FaultsOnTheWire;
    #[doc = include_str!("../../../docs/guide/wire-format.md")]
    struct WireFormat;
    #[doc = include_str!("../../../docs/guide/runtime-defaults.md")]
    struct RuntimeDefaults;
    #[doc = include_str!("../../../docs/guide/coming-from-tonic.md")]
    struct ComingFromTonic;
    #[doc = include_str!("../../../docs/guide/coming-from-tonic-api.md")]
    struct ComingFromTonicApi;
    #[doc = include_str!("../../../docs/guide/operating-frpc.md")]
    struct OperatingFrpc;
    #[doc = include_str!("../../../docs/guide/grpc.md")]
    struct Grpc;
}
