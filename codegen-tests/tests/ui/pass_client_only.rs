//! `build_server(false)`: the client is there.
use frpc_codegen_tests::client_only::capture as pb;

fn main() {
    let _new: fn(frpc::Client) -> pb::EchoServiceClient = pb::EchoServiceClient::new;
}
