//! Every type a user meets (in signatures, in compiler errors) is importable from the crate
//! root or a public module: this file names each of them by that path, so a type moved into a
//! private module without a re-export fails to compile here.
// Some tests here use `#[frpc::service]`s or `frpc::health`: without `macros` the file is left out.
#![cfg(feature = "macros")]
#![allow(dead_code)]

type Streams = (
    frpc::Streaming<()>,
    frpc::StreamSender<()>,
    frpc::BidiCall<(), ()>,
    frpc::ClientStreamingCall<(), ()>,
    frpc::ClientStreamingResponse<()>,
    frpc::RequestSender<()>,
);

type Clients = (
    frpc::Client,
    frpc::Channel,
    frpc::Endpoint,
    frpc::Negotiated,
    frpc::channel::ChannelState,
    frpc::channel::StateChanges,
    frpc::channel::Request,
    frpc::channel::Reply,
    frpc::PacketSender,
    frpc::RawPackets,
    frpc::MetadataSlot,
);

type Servers = (
    frpc::Server,
    frpc::Builder,
    frpc::Bound,
    frpc::Context,
    frpc::LayeredService,
    frpc::CallRequest,
    frpc::CallResponse,
    frpc::TakeConnection,
    frpc::MethodKind,
);

type Values = (
    frpc::Status,
    frpc::Code,
    frpc::Error,
    frpc::CloseReason,
    frpc::Metadata,
    frpc::Framing,
    frpc::ClientConfig,
    frpc::ServerConfig,
    frpc::ConnectionConfig,
    frpc::DecodeLimits,
    frpc::Concurrency,
    frpc::health::HealthReporter,
    frpc::health::HealthClient,
    frpc::health::ServingStatus,
);

#[test]
fn every_type_is_named_from_a_public_path() {
    assert!(std::mem::size_of::<Option<Streams>>() > 0);
    assert!(std::mem::size_of::<Option<Clients>>() > 0);
    assert!(std::mem::size_of::<Option<Servers>>() > 0);
    assert!(std::mem::size_of::<Option<Values>>() > 0);
}
