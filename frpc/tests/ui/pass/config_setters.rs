// The ways to build a config that keep compiling when a release adds fields: setters from
// `default()`, and assigning the public fields of a binding.
use std::time::Duration;

fn main() {
    let server = frpc::ServerConfig::default()
        .max_connections(10)
        .concurrency(frpc::Concurrency::Inline)
        .connection(
            frpc::ConnectionConfig::default()
                .framing(frpc::Framing::Legacy)
                .stream_window(64)
                .decode(frpc::DecodeLimits::default().max_depth(1_000)),
        );
    let mut client = frpc::ClientConfig::default()
        .timeout(Duration::from_secs(1))
        .stream_idle_timeout(None);
    client.connection.max_content_length = 1 << 20;
    let _builder = frpc::Server::builder()
        .concurrency(frpc::Concurrency::PerRpc)
        .config(server);
    let _endpoint = frpc::Endpoint::from_static("127.0.0.1:1")
        .timeout(Duration::from_secs(2))
        .client_config(client);
}
