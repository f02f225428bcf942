//! The root README and the guide (`docs/guide/`) show this crate's files: each must appear
//! there verbatim as a code block, and each program must run and print what the docs promise.

use std::path::Path;
use std::process::Command;

/// The fenced code blocks of a Markdown text: (info string, content).
fn code_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some("")) => blocks.push(open.take().expect("an open block")),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The README and every guide chapter, one after the other.
fn docs() -> String {
    let mut text = read("../../README.md");
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide");
    let mut chapters: Vec<_> = std::fs::read_dir(&guide)
        .unwrap_or_else(|err| panic!("{}: {err}", guide.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for chapter in chapters {
        text.push_str(&std::fs::read_to_string(&chapter).unwrap());
    }
    text
}

fn read(path: impl AsRef<Path>) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[test]
fn the_docs_show_these_files_verbatim() {
    let blocks = code_blocks(&docs());
    for (file, lang) in [
        ("proto/echo.proto", "proto"),
        ("build.rs", "rust"),
        ("src/main.rs", "rust"),
        ("src/bin/rust_first.rs", "rust"),
        ("src/bin/traced.rs", "rust"),
        ("src/bin/cancel.rs", "rust"),
        ("src/bin/metadata.rs", "rust"),
    ] {
        let text = read(file);
        assert!(
            blocks.iter().any(|(info, block)| info == lang && *block == text),
            "README.md and docs/guide/ have no ```{lang} block equal to examples/hello/{file}; paste the file:\n{text}"
        );
    }
}

#[test]
fn the_readme_dependency_lines_name_the_published_packages() {
    let blocks = code_blocks(&read("../../README.md"));
    let toml = blocks
        .iter()
        .find(|(info, block)| info == "toml" && block.contains("[dependencies]"))
        .expect("a ```toml block with [dependencies]");
    for line in [
        r#"frpc = { package = "frpc-rs", version = "0.1" }"#,
        r#"frpc-codegen = "0.1""#,
    ] {
        assert!(toml.1.contains(line), "the README's [dependencies] lack {line}");
    }
}

fn run(program: &str) -> String {
    let out = Command::new(program).output().expect("the example runs");
    assert!(
        out.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_proto_example_serves_and_calls() {
    assert_eq!(run(env!("CARGO_BIN_EXE_frpc-hello")), "hi\n");
}

#[test]
fn the_rust_first_example_serves_and_calls() {
    assert_eq!(run(env!("CARGO_BIN_EXE_rust_first")), "hi\n");
}

#[test]
fn the_traced_example_prints_both_sides_spans_with_names() {
    let out = run(env!("CARGO_BIN_EXE_traced"));
    let has = |span: &str| {
        out.lines()
            .any(|line| line.contains(span) && line.contains("close"))
    };
    assert!(
        has(r#"call{service="echo.EchoService" method="Echo" op=10}"#),
        "{out}"
    );
    assert!(
        has(r#"service="echo.EchoService" method="Echo"}: frpc::calls::server"#),
        "{out}"
    );
}

#[test]
fn the_cancellation_example_sees_the_cancel_on_the_server() {
    assert_eq!(
        run(env!("CARGO_BIN_EXE_cancel")),
        "client: DEADLINE_EXCEEDED\nserver: the client cancelled the job\n"
    );
}

#[test]
fn the_metadata_example_sends_and_receives_metadata() {
    assert_eq!(run(env!("CARGO_BIN_EXE_metadata")), "hi r-3\nUNAUTHENTICATED\n");
}
