//! Operation numbers: from 10, in file order across every service of the file.

use frpc::codegen::{MethodKind, Service};
use frpc_codegen_tests::{capture, twosvc};

struct Nothing;

impl twosvc::A for Nothing {
    async fn a1(
        &self,
        _: &frpc::Context,
        request: frpc_codegen_tests::kitchen::Inner,
    ) -> Result<frpc_codegen_tests::kitchen::Inner, frpc::Status> {
        Ok(request)
    }
    async fn a2(
        &self,
        _: &frpc::Context,
        _: frpc::Streaming<frpc_codegen_tests::kitchen::Inner>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
}

impl twosvc::B for Nothing {
    async fn b1(&self, _: &frpc::Context, _: ()) -> Result<frpc_codegen_tests::kitchen::Edge, frpc::Status> {
        Ok(Default::default())
    }
    async fn b2(
        &self,
        _: &frpc::Context,
        _: frpc_codegen_tests::kitchen::Edge,
        _: frpc::StreamSender<frpc_codegen_tests::kitchen::Inner>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
}

fn table(service: &dyn Service) -> Vec<(&'static str, u16, MethodKind)> {
    service.methods().iter().map(|m| (m.name, m.op, m.kind)).collect()
}

#[test]
fn two_services_number_across_the_file() {
    assert_eq!(
        (twosvc::a::A1, twosvc::a::A2, twosvc::b::B1, twosvc::b::B2),
        (10, 11, 12, 13)
    );
    let a = twosvc::AServer::new(Nothing);
    let b = twosvc::BServer::new(Nothing);
    assert_eq!(a.name(), "twosvc.A");
    assert_eq!(b.name(), "twosvc.B");
    assert_eq!(
        table(&a),
        [
            ("A1", 10, MethodKind::Unary),
            ("A2", 11, MethodKind::ClientStreaming)
        ]
    );
    assert_eq!(
        table(&b),
        [
            ("B1", 12, MethodKind::Unary),
            ("B2", 13, MethodKind::ServerStreaming)
        ]
    );
}

#[test]
fn capture_ops_match_go() {
    use capture::echo_service as ops;
    assert_eq!(
        (ops::ECHO, ops::ECHO_STREAM, ops::TESTY, ops::SEARCH, ops::UPLOAD),
        (10, 11, 12, 13, 14)
    );
}

#[test]
fn every_configuration_numbers_the_same() {
    use frpc_codegen_tests::{bytes, client_only, server_only};
    assert_eq!(bytes::twosvc::b::B2, 13);
    assert_eq!(client_only::twosvc::b::B2, 13);
    assert_eq!(server_only::twosvc::b::B2, 13);
}
