//! Generates the services the examples and their tests run.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    frpc_codegen::compile(
        &["../proto/capture.proto", "../proto/takeover.proto"],
        &["../proto"],
    )?;
    Ok(())
}
