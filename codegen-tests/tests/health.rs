//! `frpc::health`'s hand-declared messages against the code frpc-codegen generates from
//! `proto/frpc/health/v1/health.proto`: the same bytes both ways, every status, so clients
//! generated from the .proto (in any language) talk to frpc's health service.

use frpc::codegen::Message;
use frpc::health::{HealthCheckRequest, HealthCheckResponse, ServingStatus};
use frpc_codegen_tests::default::health_v1 as generated;

#[test]
fn requests_match_the_proto() {
    for service in ["", "pkg.Svc", "a name with ünïcode"] {
        let ours = HealthCheckRequest {
            service: service.into(),
        }
        .to_polyglot();
        let theirs = generated::HealthCheckRequest {
            service: service.into(),
        }
        .to_polyglot();
        assert_eq!(ours, theirs, "{service:?}");
        assert_eq!(
            HealthCheckRequest::from_polyglot(&theirs).unwrap().service,
            service
        );
    }
}

#[test]
fn responses_match_the_proto_for_every_status() {
    use generated::health_check_response::ServingStatus as Generated;
    let pairs = [
        (ServingStatus::Unknown, Generated::Unknown),
        (ServingStatus::Serving, Generated::Serving),
        (ServingStatus::NotServing, Generated::NotServing),
        (ServingStatus::ServiceUnknown, Generated::ServiceUnknown),
    ];
    for (ours, theirs) in pairs {
        let ours_bytes = HealthCheckResponse { status: ours }.to_polyglot();
        let theirs_bytes = generated::HealthCheckResponse {
            status: theirs as i32,
        }
        .to_polyglot();
        assert_eq!(ours_bytes, theirs_bytes, "{ours:?}");
        assert_eq!(
            HealthCheckResponse::from_polyglot(&theirs_bytes).unwrap().status,
            ours
        );
    }
}
