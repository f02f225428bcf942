// A struct literal of a config does not compile outside frpc (`#[non_exhaustive]`), not even
// with `..Default::default()`: so no user code can break when a release adds a field.
fn main() {
    let _server = frpc::ServerConfig {
        max_connections: 10,
        ..Default::default()
    };
    let _client = frpc::ClientConfig {
        extensions: false,
        ..Default::default()
    };
}
