//! Generated code only compiles against the frpc series it was generated for: every file starts
//! with `const _: () = ::frpc::codegen::REQUIRES_FRPC_0_1;`.
//! The runtime defines the marker as `frpc::codegen::REQUIRES_FRPC_0_1`.

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn marker_names_this_series() {
    let major: u32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap();
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let expected = if major == 0 {
        format!("REQUIRES_FRPC_0_{minor}")
    } else {
        format!("REQUIRES_FRPC_{major}")
    };
    assert_eq!(frpc_codegen::emit::version_marker(), expected);
}

#[test]
fn generated_files_check_the_runtime_version() {
    let files = frpc_codegen::configure()
        .generate_frpc(
            &[format!("{MANIFEST}/../proto/capture.proto")],
            &[format!("{MANIFEST}/../proto")],
        )
        .unwrap();
    let line = format!(
        "const _: () = ::frpc::codegen::{};",
        frpc_codegen::emit::version_marker()
    );
    for (name, code) in files {
        assert!(code.contains(&line), "{name} lacks `{line}`:\n{code}");
    }
    // And this crate, whose every generated file has the line, compiles: the marker resolves.
    let _ = frpc_codegen_tests::capture::echo_service::ECHO;
}

#[test]
fn mismatched_runtime_fails_on_the_version_check() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui_version/*.rs");
}
