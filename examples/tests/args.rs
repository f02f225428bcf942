//! The example programs' command lines: defaults, every flag, `--help`, bad values.

use clap::{CommandFactory, Parser};
use frpc::{Concurrency, Framing};
use frpc_examples::args::{ClientArgs, ServerArgs};

#[test]
fn clap_definitions_are_consistent() {
    ServerArgs::command().debug_assert();
    ClientArgs::command().debug_assert();
}

#[test]
fn defaults_match_the_documented_ones() {
    let server = ServerArgs::try_parse_from(["capture-server"]).unwrap();
    assert_eq!(server.addr, "127.0.0.1:8080");
    assert_eq!(server.framing, Framing::Frisbee);
    assert_eq!(server.concurrency, Concurrency::PerRpc);
    assert!(!server.grpc);
    let client = ClientArgs::try_parse_from(["capture-client"]).unwrap();
    assert_eq!(
        (client.addr.as_str(), client.framing),
        ("127.0.0.1:8080", Framing::Frisbee)
    );
}

#[test]
fn every_flag_parses() {
    let server = ServerArgs::try_parse_from([
        "capture-server",
        "--addr",
        "127.0.0.1:0",
        "--framing",
        "legacy",
        "--concurrency",
        "limited:8",
        "--grpc",
    ])
    .unwrap();
    assert_eq!(server.addr, "127.0.0.1:0");
    assert_eq!(server.framing, Framing::Legacy);
    assert_eq!(server.concurrency, Concurrency::Limited(8));
    assert!(server.grpc);
    let inline = ServerArgs::try_parse_from(["capture-server", "--concurrency=inline"]).unwrap();
    assert_eq!(inline.concurrency, Concurrency::Inline);
    let client = ClientArgs::try_parse_from(["capture-client", "--framing", "v0.10"]).unwrap();
    assert_eq!(client.framing, Framing::Legacy);
}

#[test]
fn help_lists_every_flag() {
    let err = ServerArgs::try_parse_from(["capture-server", "--help"]).unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
    let help = err.to_string();
    for flag in [
        "--addr",
        "--framing",
        "--concurrency",
        "limited:N",
        "--grpc",
        "--help",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    let help = ClientArgs::try_parse_from(["capture-client", "--help"])
        .unwrap_err()
        .to_string();
    assert!(help.contains("--addr") && help.contains("--framing"), "{help}");
}

#[test]
fn bad_values_are_refused_with_the_reason() {
    let err = ServerArgs::try_parse_from(["capture-server", "--concurrency", "lots"]).unwrap_err();
    assert!(err.to_string().contains("per-rpc, inline or limited:N"), "{err}");
    let err = ClientArgs::try_parse_from(["capture-client", "--framing", "http2"]).unwrap_err();
    assert!(err.to_string().contains("expected frisbee or legacy"), "{err}");
    assert!(ServerArgs::try_parse_from(["capture-server", "--port", "1"]).is_err());
}
