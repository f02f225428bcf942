//! `client_attribute("twosvc.B", "#[cfg(any())]")` removes `BClient` (and its impl) only.
use frpc_codegen_tests::adopters::twosvc;

fn main() {
    let _ = std::any::type_name::<twosvc::BServer<()>>();
    let _ = std::any::type_name::<twosvc::BClient>();
}
