//! `build_client(false)`: the trait and the server are there.
use frpc_codegen_tests::server_only::twosvc;

fn main() {
    let _ = twosvc::a::A1;
    let _ = std::any::type_name::<twosvc::AServer<()>>();
}
