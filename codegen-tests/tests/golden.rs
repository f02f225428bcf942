//! The generated code for `proto/capture.proto` is checked in at `golden/capture.rs`: any
//! change to the generator shows up as a diff in review. `UPDATE_GOLDEN=1 cargo test -p
//! frpc-codegen-tests --test golden` rewrites it.

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn generated_capture() -> String {
    let proto = format!("{MANIFEST}/../proto/capture.proto");
    let include = format!("{MANIFEST}/../proto");
    let files = frpc_codegen::configure()
        .generate_frpc(&[proto], &[include])
        .expect("generates");
    assert_eq!(files.len(), 1, "one package");
    let (name, code) = files.into_iter().next().unwrap();
    assert_eq!(name, "capture.rs");
    code
}

#[test]
fn capture_golden() {
    let path = format!("{MANIFEST}/golden/capture.rs");
    let generated = generated_capture();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    if golden != generated {
        let line = golden
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| golden.lines().count().min(generated.lines().count()));
        panic!(
            "generated code for capture.proto drifted from {path} (first difference at line {}):\n  \
             golden:    {:?}\n  generated: {:?}\nIf the change is intended, run \
             `UPDATE_GOLDEN=1 cargo test -p frpc-codegen-tests --test golden` and review the diff.",
            line + 1,
            golden.lines().nth(line).unwrap_or("<end of file>"),
            generated.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}

/// Generation is deterministic (no hash-map order leaks into the output).
#[test]
fn generation_is_deterministic() {
    assert_eq!(generated_capture(), generated_capture());
}
