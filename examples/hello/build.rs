// build.rs
fn main() -> Result<(), Box<dyn std::error::Error>> {
    frpc_codegen::compile(&["proto/echo.proto"], &["proto"])?; // protox: no system protoc
    Ok(())
}
