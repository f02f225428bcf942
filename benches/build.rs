//! Generates the benchmark service twice from one proto: for frpc and for tonic, both with every
//! `bytes` field as `bytes::Bytes` (the `Blob` method's payload); the same for the streaming
//! service the gRPC face's tests use.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    // streams.proto: the gRPC face's streaming tests, not the benchmarks.
    let (protos, includes) = (["proto/benchmark.proto", "proto/streams.proto"], ["proto"]);
    std::fs::create_dir_all(out.join("frpc"))?;
    frpc_codegen::configure()
        .bytes(["."])
        .out_dir(out.join("frpc"))
        .compile(&protos, &includes)?;
    std::fs::create_dir_all(out.join("tonic"))?;
    let fds = protox::compile(protos, includes)?;
    tonic_prost_build::configure()
        .bytes(".")
        .out_dir(out.join("tonic"))
        .compile_fds(fds)?;
    Ok(())
}
