//! Every generated package module embeds `FILE_DESCRIPTOR_SET` (its files and their imports)
//! and its servers return it from `Service::file_descriptor_set`, for reflection.

use std::collections::BTreeSet;

use frpc::codegen::Service;
use frpc::codegen::prost::Message as _;
use frpc::codegen::prost_types::{DescriptorProto, FileDescriptorSet};
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

fn decode(bytes: &[u8]) -> FileDescriptorSet {
    FileDescriptorSet::decode(bytes).expect("FILE_DESCRIPTOR_SET decodes")
}

/// The full names (`.pkg.Msg`, nested ones included) of every message and enum defined in
/// `set`, and every type name its fields refer to.
fn defined_and_used(set: &FileDescriptorSet) -> (BTreeSet<String>, BTreeSet<String>) {
    fn walk(prefix: &str, messages: &[DescriptorProto], out: &mut (BTreeSet<String>, BTreeSet<String>)) {
        for m in messages {
            let name = format!("{prefix}.{}", m.name());
            out.0
                .extend(m.enum_type.iter().map(|e| format!("{name}.{}", e.name())));
            out.1.extend(
                m.field
                    .iter()
                    .filter(|f| f.type_name.is_some())
                    .map(|f| f.type_name().to_string()),
            );
            walk(&name, &m.nested_type, out);
            out.0.insert(name);
        }
    }
    let mut out = (BTreeSet::new(), BTreeSet::new());
    for file in &set.file {
        let prefix = if file.package().is_empty() {
            String::new()
        } else {
            format!(".{}", file.package())
        };
        out.0
            .extend(file.enum_type.iter().map(|e| format!("{prefix}.{}", e.name())));
        walk(&prefix, &file.message_type, &mut out);
    }
    out
}

/// The set of a package importing others holds its service, every imported file (transitively,
/// imports first) and so every type the methods and fields name; source info is stripped.
#[test]
fn package_set_resolves_every_type() {
    let set = decode(twosvc::FILE_DESCRIPTOR_SET);
    let files: Vec<&str> = set.file.iter().map(|f| f.name()).collect();
    for needed in [
        "kitchen/services.proto",
        "kitchen/kitchen.proto",
        "kitchen/other.proto",
        "kitchen/shared.proto",
        "google/protobuf/empty.proto",
        "google/protobuf/timestamp.proto",
    ] {
        assert!(files.contains(&needed), "{needed} missing from {files:?}");
    }
    for (at, file) in set.file.iter().enumerate() {
        assert!(
            file.source_code_info.is_none(),
            "{} keeps source info",
            file.name()
        );
        for dep in &file.dependency {
            let before = files[..at].contains(&dep.as_str());
            assert!(before, "{} comes before its import {dep}", file.name());
        }
    }
    let services = &set
        .file
        .iter()
        .find(|f| f.name() == "kitchen/services.proto")
        .unwrap()
        .service;
    let names: Vec<&str> = services.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["A", "B", "Clock"]);

    let (defined, mut used) = defined_and_used(&set);
    let methods = services.iter().flat_map(|s| &s.method);
    used.extend(methods.flat_map(|m| [m.input_type().to_string(), m.output_type().to_string()]));
    assert!(used.contains(".kitchen.other.Color"), "{used:?}");
    for ty in &used {
        assert!(defined.contains(ty), "{ty} is not defined in the set");
    }
}

/// A package without imports holds only its own file; the server returns the module's
/// constant.
#[test]
fn servers_return_their_package_set() {
    let set = decode(capture::FILE_DESCRIPTOR_SET);
    let files: Vec<&str> = set.file.iter().map(|f| f.name()).collect();
    assert_eq!(files, ["capture.proto"]);
    assert_eq!(set.file[0].service[0].name(), "EchoService");

    let server = twosvc::AServer::new(Nothing);
    assert_eq!(server.file_descriptor_set(), twosvc::FILE_DESCRIPTOR_SET);
    // Through a per-service layer too.
    let layered = twosvc::AServer::new(Nothing).with_interceptor(|_| Ok(()));
    assert_eq!(layered.file_descriptor_set(), twosvc::FILE_DESCRIPTOR_SET);
}
