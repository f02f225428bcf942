//! Configs survive upgrades: a struct literal is refused outside frpc (`#[non_exhaustive]`, a
//! compile-fail test) while the setter style compiles (a compile-pass test), and the builders'
//! own settings compose with a whole config given before or after them.
//! `TRYBUILD=overwrite cargo test -p frpc-rs --test configs` rewrites the `.stderr` files.

use std::time::Duration;

use frpc::{Concurrency, Framing, ServerConfig};

#[test]
fn literals_are_refused_and_setters_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}

/// `.concurrency(Inline).config(cfg)` keeps `Inline`: the builder's settings apply over the
/// base config whichever comes first. Checked on a running server: an Inline server answers
/// calls of one connection in order, one at a time (its handler sees no other call running).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builder_settings_compose_with_a_config() {
    let base = ServerConfig::default().shutdown_grace(Duration::from_secs(9));
    for builder in [
        frpc::Server::builder()
            .concurrency(Concurrency::Inline)
            .framing(Framing::Legacy)
            .config(base.clone()),
        frpc::Server::builder()
            .config(base.clone())
            .concurrency(Concurrency::Inline)
            .framing(Framing::Legacy),
    ] {
        let server = builder.build().unwrap();
        let config = server.config();
        assert_eq!(config.concurrency, Concurrency::Inline);
        assert_eq!(config.connection.framing, Framing::Legacy);
        assert_eq!(config.shutdown_grace, Duration::from_secs(9), "the base is kept");
    }
}

/// The same for an `Endpoint`: its own timeout and framing survive a later `client_config`.
#[test]
fn endpoint_settings_compose_with_a_config() {
    let base = frpc::ClientConfig::default().connect_timeout(Duration::from_secs(7));
    let endpoint = frpc::Endpoint::from_static("127.0.0.1:1")
        .timeout(Duration::from_secs(2))
        .framing(Framing::Legacy)
        .client_config(base);
    let config = endpoint.config();
    assert_eq!(config.timeout, Some(Duration::from_secs(2)));
    assert_eq!(config.connection.framing, Framing::Legacy);
    assert_eq!(config.connect_timeout, Duration::from_secs(7));
}

/// A tonic habit, a URL given as the address, fails with an error that says what frpc takes:
/// it said only that the name was unknown.
#[tokio::test]
async fn a_url_as_the_address_says_host_port_is_wanted() {
    let err = frpc::Client::connect("http://127.0.0.1:1").await.unwrap_err();
    assert!(err.to_string().contains("`host:port`, without a scheme"), "{err}");
}
