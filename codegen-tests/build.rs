//! Generates the test protos under several builder configurations, one output directory each
//! (`$OUT_DIR/<config>/<package>.rs`); `src/lib.rs` includes them all, so every configuration
//! must compile warning-free.

use std::path::PathBuf;

const KITCHEN: &[&str] = &[
    "proto/kitchen/kitchen.proto",
    "proto/kitchen/other.proto",
    "proto/kitchen/shared.proto",
    "proto/kitchen/services.proto",
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

    // Every `bytes` as `bytes::Bytes`, and attributes on types and fields.
    let configured = || {
        frpc_codegen::configure()
            .bytes(["."])
            .type_attribute(".", "#[allow(dead_code)]")
            .type_attribute(".kitchen.Inner", "#[derive(PartialOrd)]")
            .field_attribute(".kitchen.Scalars.s", "#[allow(unused)]")
            .out_dir(out.join("bytes"))
    };
    configured().compile(&capture, &capture_inc)?;
    configured().compile(KITCHEN, &["proto"])?;

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
    Ok(())
}
