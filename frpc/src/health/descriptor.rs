//! The health service's `.proto` (`proto/frpc/health/v1/health.proto`) as an encoded
//! `FileDescriptorSet`, for server reflection: in frpc's package for the fRPC face, and in
//! `grpc.health.v1` for the gRPC face, which serves the same service under that name.
//!
//! Built from prost-types' descriptor structs rather than compiled from the file, since the
//! runtime has no build step; `descriptor_matches_the_proto` checks it against the file.

use std::sync::OnceLock;

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileDescriptorSet, MethodDescriptorProto, ServiceDescriptorProto,
};

/// frpc's health service, package `frpc.health.v1`.
pub(crate) fn frpc_set() -> &'static [u8] {
    static SET: OnceLock<Vec<u8>> = OnceLock::new();
    SET.get_or_init(|| encoded_set("frpc"))
}

/// The same service as gRPC names it, package `grpc.health.v1`.
#[cfg(feature = "grpc")]
pub(crate) fn grpc_set() -> &'static [u8] {
    static SET: OnceLock<Vec<u8>> = OnceLock::new();
    SET.get_or_init(|| encoded_set("grpc"))
}

/// The file `{owner}/health/v1/health.proto`, package `{owner}.health.v1`.
fn encoded_set(owner: &str) -> Vec<u8> {
    let package = format!("{owner}.health.v1");
    let name = |short: &str| format!(".{package}.{short}");
    let request = DescriptorProto {
        name: Some("HealthCheckRequest".into()),
        field: vec![field("service", Type::String, None)],
        ..Default::default()
    };
    let statuses = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];
    let response = DescriptorProto {
        name: Some("HealthCheckResponse".into()),
        field: vec![field(
            "status",
            Type::Enum,
            Some(name("HealthCheckResponse.ServingStatus")),
        )],
        enum_type: vec![EnumDescriptorProto {
            name: Some("ServingStatus".into()),
            value: (0..)
                .zip(statuses)
                .map(|(number, value)| EnumValueDescriptorProto {
                    name: Some(value.into()),
                    number: Some(number),
                    options: None,
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let method = |method: &str, server_streaming: bool| MethodDescriptorProto {
        name: Some(method.into()),
        input_type: Some(name("HealthCheckRequest")),
        output_type: Some(name("HealthCheckResponse")),
        server_streaming: server_streaming.then_some(true),
        ..Default::default()
    };
    let file = FileDescriptorProto {
        name: Some(format!("{owner}/health/v1/health.proto")),
        package: Some(package.clone()),
        message_type: vec![request, response],
        service: vec![ServiceDescriptorProto {
            name: Some("Health".into()),
            method: vec![method("Check", false), method("Watch", true)],
            options: None,
        }],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    FileDescriptorSet { file: vec![file] }.encode_to_vec()
}

/// A proto3 singular field, number 1 (each health message has one).
fn field(name: &str, kind: Type, type_name: Option<String>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(1),
        label: Some(Label::Optional as i32),
        r#type: Some(kind as i32),
        type_name,
        json_name: Some(name.into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file as protox compiles it, without what reflection does not carry here (source
    /// positions, `go_package`).
    fn compiled() -> FileDescriptorProto {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto");
        let set = protox::compile(["frpc/health/v1/health.proto"], [root]).unwrap();
        let mut file = set.file.into_iter().next().unwrap();
        file.source_code_info = None;
        file.options = None;
        file
    }

    fn built(set: &[u8]) -> FileDescriptorProto {
        let mut files = FileDescriptorSet::decode(set).unwrap().file;
        assert_eq!(files.len(), 1);
        files.remove(0)
    }

    #[test]
    fn descriptor_matches_the_proto() {
        assert_eq!(built(frpc_set()), compiled());
    }

    #[cfg(feature = "grpc")]
    #[test]
    fn the_grpc_descriptor_is_the_same_file_in_grpcs_package() {
        let grpc = built(grpc_set());
        assert_eq!(grpc.package.as_deref(), Some("grpc.health.v1"));
        assert_eq!(grpc.name.as_deref(), Some("grpc/health/v1/health.proto"));
        let as_frpc = format!("{grpc:?}").replace("grpc.health.v1", "frpc.health.v1");
        let as_frpc = as_frpc.replace("grpc/health/v1", "frpc/health/v1");
        assert_eq!(as_frpc, format!("{:?}", compiled()));
    }
}
