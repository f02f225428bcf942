//! `frpc::health`'s hand-declared messages against the code frpc-codegen generates from
//! `proto/frpc/health/v1/health.proto`: the same bytes both ways, every status, so clients
//! generated from the .proto (in any language) talk to frpc's health service: in polyglot, and in
//! protobuf between frpc peers (the generated client calling an frpc server).

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

// The protobuf encoding (docs/extensions.md §10): `frpc::health`'s hand-written
// `prost::Message` impls against prost's code for the .proto, byte for byte.

const SERVICES: [&str; 4] = ["", "pkg.Svc", "a name with ünïcode", "frpc.health.v1.Health"];

#[test]
fn requests_match_the_proto_in_protobuf() {
    use frpc::codegen::prost::Message as _;
    const { assert!(<HealthCheckRequest as Message>::PROTOBUF) };
    let long = "x".repeat(300); // a two-byte length
    for service in SERVICES.into_iter().chain([long.as_str()]) {
        let ours = HealthCheckRequest {
            service: service.into(),
        };
        let theirs = generated::HealthCheckRequest {
            service: service.into(),
        };
        let ours_bytes = ours.encode_to_vec();
        let theirs_bytes = theirs.encode_to_vec();
        assert_eq!(ours_bytes, theirs_bytes, "{service:?}");
        assert_eq!(ours.encoded_len(), theirs_bytes.len());
        // What frpc sends: `Message::encode_protobuf`, the same bytes.
        let mut sent = Vec::new();
        ours.encode_protobuf(&mut sent);
        assert_eq!(sent, theirs_bytes);
        assert_eq!(ours.protobuf_len(), sent.len());
        // Each reads the other's bytes.
        assert_eq!(HealthCheckRequest::decode(&theirs_bytes[..]).unwrap(), ours);
        let read = <HealthCheckRequest as Message>::decode_protobuf(theirs_bytes.into()).unwrap();
        assert_eq!(read, ours);
        assert_eq!(
            generated::HealthCheckRequest::decode(&ours_bytes[..]).unwrap(),
            theirs
        );
    }
    // Proto3: the empty string is no field at all.
    assert!(HealthCheckRequest::default().encode_to_vec().is_empty());
}

#[test]
fn responses_match_the_proto_in_protobuf_for_every_status() {
    use frpc::codegen::prost::Message as _;
    use generated::health_check_response::ServingStatus as Generated;
    const { assert!(<HealthCheckResponse as Message>::PROTOBUF) };
    let pairs = [
        (ServingStatus::Unknown, Generated::Unknown, &[][..]),
        (ServingStatus::Serving, Generated::Serving, &[0x08, 0x01]),
        (ServingStatus::NotServing, Generated::NotServing, &[0x08, 0x02]),
        (
            ServingStatus::ServiceUnknown,
            Generated::ServiceUnknown,
            &[0x08, 0x03],
        ),
    ];
    for (ours, theirs, bytes) in pairs {
        let ours = HealthCheckResponse { status: ours };
        let theirs = generated::HealthCheckResponse {
            status: theirs as i32,
        };
        let ours_bytes = ours.encode_to_vec();
        assert_eq!(ours_bytes, theirs.encode_to_vec(), "{ours:?}");
        assert_eq!(ours_bytes, bytes, "{ours:?}");
        assert_eq!(ours.encoded_len(), bytes.len());
        let mut sent = Vec::new();
        ours.encode_protobuf(&mut sent);
        assert_eq!(sent, bytes);
        assert_eq!(ours.protobuf_len(), bytes.len());
        assert_eq!(HealthCheckResponse::decode(bytes).unwrap(), ours);
        let read = <HealthCheckResponse as Message>::decode_protobuf(bytes.to_vec().into()).unwrap();
        assert_eq!(read, ours);
        assert_eq!(
            generated::HealthCheckResponse::decode(&ours_bytes[..]).unwrap(),
            theirs
        );
    }
}

#[test]
fn protobuf_decoding_tolerates_what_a_newer_proto_sends() {
    use frpc::codegen::prost::Message as _;
    // A status number this version does not declare: `Unknown`, as prost's `status()` reads it.
    for number in [4, 1000, -1] {
        let bytes = generated::HealthCheckResponse { status: number }.encode_to_vec();
        let ours = HealthCheckResponse::decode(&bytes[..]).unwrap();
        assert_eq!(ours.status, ServingStatus::Unknown, "{number}");
        let theirs = generated::HealthCheckResponse::decode(&bytes[..]).unwrap();
        assert_eq!(
            theirs.status(),
            generated::health_check_response::ServingStatus::Unknown
        );
    }
    // Fields it does not know are skipped, whatever their wire type; the last value wins.
    let mut bytes = vec![0x10, 0x05, 0x1a, 0x02, b'h', b'i', 0x25, 1, 2, 3, 4];
    bytes.extend([0x08, 0x01, 0x08, 0x02]);
    let ours = HealthCheckResponse::decode(&bytes[..]).unwrap();
    assert_eq!(ours.status, ServingStatus::NotServing);
    let mut bytes = vec![0x10, 0x05, 0x0a, 0x01, b'a'];
    bytes.extend([0x0a, 0x01, b'b', 0x3a, 0x00]);
    assert_eq!(HealthCheckRequest::decode(&bytes[..]).unwrap().service, "b");
    // A field 1 of the wrong wire type, and bytes that are not UTF-8, are errors, as in prost.
    assert!(HealthCheckResponse::decode(&[0x0a, 0x00][..]).is_err());
    assert!(generated::HealthCheckResponse::decode(&[0x0a, 0x00][..]).is_err());
    assert!(HealthCheckRequest::decode(&[0x08, 0x01][..]).is_err());
    assert!(HealthCheckRequest::decode(&[0x0a, 0x01, 0xff][..]).is_err());
    assert!(generated::HealthCheckRequest::decode(&[0x0a, 0x01, 0xff][..]).is_err());
}

/// A server with `frpc::health` (every service protobuf-capable) and the generated client
/// (renumbered to frpc's health operations, `health_client`) calling it in protobuf.
#[tokio::test]
async fn a_client_generated_from_the_proto_calls_frpc_health_in_protobuf() {
    use frpc_codegen_tests::health_client::{self as client, health_check_response::ServingStatus as Status};
    assert_eq!((client::health::CHECK, client::health::WATCH), (0xFF00, 0xFF01));
    assert_eq!(
        (client::health::CHECK, client::health::WATCH),
        (frpc::health::CHECK_OP, frpc::health::WATCH_OP)
    );
    let (reporter, service) = frpc::health::service();
    let bound = frpc::Server::builder()
        .add_service(service)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let connection = frpc::Client::connect(addr).await.unwrap();
    assert!(connection.negotiated().await);
    assert!(connection.protobuf_accepted());
    let health = client::HealthClient::new(connection);
    let check = async |service: &str| {
        let request = client::HealthCheckRequest {
            service: service.into(),
        };
        health.check(request).await.unwrap().status()
    };
    assert_eq!(check("").await, Status::Serving);
    assert_eq!(check("pkg.Svc").await, Status::ServiceUnknown);
    reporter.set_serving("pkg.Svc");
    assert_eq!(check("pkg.Svc").await, Status::Serving);

    let request = client::HealthCheckRequest {
        service: "pkg.Svc".into(),
    };
    let mut watch = health.watch(request).await.unwrap();
    let mut next = async || watch.message().await.unwrap().unwrap().status();
    assert_eq!(next().await, Status::Serving);
    reporter.set_not_serving("pkg.Svc");
    assert_eq!(next().await, Status::NotServing);
    reporter.set_status("pkg.Svc", ServingStatus::Unknown);
    assert_eq!(next().await, Status::Unknown);
    reporter.set_status("pkg.Svc", ServingStatus::ServiceUnknown);
    assert_eq!(next().await, Status::ServiceUnknown);
}
