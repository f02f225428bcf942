//! Generates the test protos under several builder configurations, one output directory each
//! (`$OUT_DIR/<config>/<package>.rs`); `src/lib.rs` includes them all, so every configuration
//! must compile warning-free. `adopters` nests its packages with an include file instead.

use std::path::PathBuf;

use frpc_codegen::OperationNumbering;

const KITCHEN: &[&str] = &[
    "proto/kitchen/kitchen.proto",
    "proto/kitchen/other.proto",
    "proto/kitchen/shared.proto",
    "proto/kitchen/services.proto",
];

const SPLIT: &[&str] = &[
    "proto/split/orders.proto",
    "proto/split/billing.proto",
    "proto/split/audit.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let capture = ["../proto/capture.proto"];
    let capture_inc = ["../proto"];

    // Default configuration (what `frpc_codegen::compile` does), into its own directory.
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&capture, &capture_inc)?;
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(KITCHEN, &["proto"])?;
    // Hostile-peer schemas: the default configuration only.
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&["proto/hostile/hostile.proto"], &["proto"])?;
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&["proto/shop/shop.proto"], &["proto"])?;
    // Methods named like the client's own, deprecated fields and methods.
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&["proto/legacy/legacy.proto"], &["proto"])?;
    // Floating-point values in every field shape (exact protobuf encoding, Go's bytes).
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&["proto/values/values.proto"], &["proto"])?;
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(SPLIT, &["proto"])?;
    // proto2: required fields, defaults, packed and unpacked repeated scalars.
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&["proto/two/two.proto"], &["proto"])?;
    // frpc's health service schema, whose messages `frpc::health` writes by hand.
    frpc_codegen::configure()
        .out_dir(out.join("default"))
        .compile(&["../proto/frpc/health/v1/health.proto"], &["../proto"])?;
    // The client a user in any language makes from it: generated, then its two operation numbers
    // changed to the fixed ones frpc serves health on (docs/health.md), for tests/health.rs.
    frpc_codegen::configure()
        .out_dir(out.join("health_client"))
        .build_server(false)
        .compile(&["../proto/frpc/health/v1/health.proto"], &["../proto"])?;
    renumber_health_client(&out.join("health_client/frpc.health.v1.rs"))?;

    // Rust keywords as package, service and method names, into `$OUT_DIR` itself (the default
    // out_dir), for `frpc::include_proto!("r#type.r#async")` (tests/keywords.rs).
    frpc_codegen::compile(&["proto/keywords/keywords.proto"], &["proto"])?;

    // One schema in two versions (tests/evolution.rs): a v1 client against a v2 server.
    for version in ["v1", "v2"] {
        frpc_codegen::configure()
            .out_dir(out.join(format!("evolve_{version}")))
            .compile(&[format!("proto/evolve/{version}/evolve.proto")], &["proto"])?;
    }

    // Every `bytes` as `bytes::Bytes`, every map a `BTreeMap`, and attributes on types and
    // fields.
    let configured = || {
        frpc_codegen::configure()
            .bytes(["."])
            .btree_map(["."])
            .type_attribute(".", "#[allow(dead_code)]")
            .type_attribute(".kitchen.Inner", "#[derive(PartialOrd)]")
            .field_attribute(".kitchen.Scalars.s", "#[allow(unused)]")
            .out_dir(out.join("bytes"))
    };
    configured().compile(&capture, &capture_inc)?;
    configured().compile(KITCHEN, &["proto"])?;
    configured().compile(&["proto/blob/blob.proto"], &["proto"])?;

    // Trait methods with default bodies answering UNIMPLEMENTED (tests/stubs.rs).
    let stubs = || {
        frpc_codegen::configure()
            .generate_default_stubs(true)
            .out_dir(out.join("stubs"))
    };
    stubs().compile(&capture, &capture_inc)?;
    stubs().compile(KITCHEN, &["proto"])?;

    // tonic-build's and prost-build's `boxed`, `skip_debug` and `disable_comments`
    // (tests/tuned.rs): message fields boxed (plain, in a oneof, well-known, from another
    // package), a message whose `Debug` is the crate's own, comments left out.
    let tuned = || {
        frpc_codegen::configure()
            .boxed([
                ".kitchen.Edge.first_msg",
                ".kitchen.Edge.choice.c_msg",
                ".kitchen.Wkt.at",
                ".kitchen.Wkt.nothing",
                ".kitchen.Wkt.remote",
            ])
            .skip_debug([".kitchen.Inner"])
            .disable_comments([".kitchen.Inner", ".twosvc.A.A1", ".twosvc.B"])
            .out_dir(out.join("tuned"))
    };
    tuned().compile(&capture, &capture_inc)?;
    tuned().compile(KITCHEN, &["proto"])?;

    // Client only, server only.
    let client_only = || {
        frpc_codegen::configure()
            .build_server(false)
            .out_dir(out.join("client_only"))
    };
    client_only().compile(&capture, &capture_inc)?;
    client_only().compile(KITCHEN, &["proto"])?;
    let server_only = || {
        frpc_codegen::configure()
            .build_client(false)
            .out_dir(out.join("server_only"))
    };
    server_only().compile(&capture, &capture_inc)?;
    server_only().compile(KITCHEN, &["proto"])?;

    // What tonic-build users reach for, from an already compiled descriptor set: extern types
    // (a whole package, and two types written by hand in `src/lib.rs`), message/enum/server/
    // client attributes (`#[cfg]`s included), the descriptor set and an include file.
    let protos: Vec<&str> = KITCHEN.iter().copied().chain(["proto/shop/shop.proto"]).collect();
    // The extern package gets no file (frpc-codegen before session 30 wrote a stub, which a
    // build directory may still hold: `tests/adopters.rs` checks there is none).
    let _ = std::fs::remove_file(out.join("adopters/shared.v1.rs"));
    let fds = protox::compile(&protos, ["proto"])?;
    frpc_codegen::configure()
        .extern_path(".shared.v1", "crate::default::shared::v1")
        .extern_path(".shop.Money", "crate::money::Money")
        .extern_path(".shop.Side", "crate::money::Side")
        .message_attribute(".kitchen.Inner", "#[derive(PartialOrd, Ord)]")
        .enum_attribute("Sparse", "#[doc(alias = \"SparseAlias\")]")
        .type_attribute(".kitchen.Empty", "#[cfg(any())]")
        .type_attribute(".kitchen.other.Color", "#[cfg(all())]")
        .server_attribute(".twosvc.A", "#[derive(Default)]")
        .client_attribute("twosvc.B", "#[cfg(any())]")
        .client_attribute(".", "#[doc(alias = \"AnyClient\")]")
        .file_descriptor_set_path(out.join("descriptors/adopters.bin")) // a new directory
        .include_file("protos.rs")
        .out_dir(out.join("adopters"))
        .compile_fds(fds)?;

    // Two files of one package, each with a service, plus another package: numbered per
    // package and shared across the whole call.
    frpc_codegen::configure()
        .operation_numbering(OperationNumbering::PerPackage)
        .out_dir(out.join("per_package"))
        .compile(SPLIT, &["proto"])?;
    frpc_codegen::configure()
        .operation_numbering(OperationNumbering::Shared)
        .out_dir(out.join("shared_ops"))
        .compile(SPLIT, &["proto"])?;
    Ok(())
}

/// Changes the generated health client's `Check` (10) and `Watch` (11) to `0xFF00` and
/// `0xFF01`: the call, the traced operation (one number for both in a unary call) and the
/// constant of each. Fails the build if the generated code no longer has the expected shape,
/// rather than leave a number unchanged.
fn renumber_health_client(path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let code = std::fs::read_to_string(path)?;
    let mut out = String::with_capacity(code.len());
    let mut changed = 0;
    let mut method = "";
    for line in code.lines() {
        let trimmed = line.trim();
        let mut line = line.to_string();
        match trimmed {
            "(\"frpc.health.v1.Health\", \"Check\")," => method = "Check",
            "\"Watch\"," => method = "Watch",
            "10," if method == "Check" => (line, changed) = (line.replace("10", "0xFF00"), changed + 1),
            "11," if method == "Watch" => (line, changed) = (line.replace("11", "0xFF01"), changed + 1),
            // Watch: `traced`'s operation, then the call's: the call and its client on lines
            // of their own keep the method. Check's `traced_unary` names its operation once.
            "::frpc::codegen::call_unary_at("
            | "::frpc::codegen::call_server_streaming_at("
            | "&self.client," => {}
            _ => {
                for (from, to) in [
                    ("CHECK: u16 = 10;", "CHECK: u16 = 0xFF00;"),
                    ("WATCH: u16 = 11;", "WATCH: u16 = 0xFF01;"),
                ] {
                    if line.contains(from) {
                        line = line.replace(from, to);
                        changed += 1;
                    }
                }
                method = "";
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    if changed != 5 {
        return Err(format!("renumbering the health client changed {changed} numbers, not 5").into());
    }
    std::fs::write(path, out)?;
    Ok(())
}
