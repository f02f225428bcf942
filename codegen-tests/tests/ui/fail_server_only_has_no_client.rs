use frpc_codegen_tests::server_only::capture as pb;

fn main() {
    let _ = std::any::type_name::<pb::EchoServiceClient>();
}
