//! Proto comments become doc comments rustdoc reads as the comment's text: every code block
//! fenced as `text` (an indented example would otherwise be a Rust doctest, failing the
//! user's `cargo test`), HTML-looking text and brackets escaped, bare URLs linked. The
//! comments are those of `proto/kitchen/services.proto` and `kitchen.proto`; CI's `cargo doc`
//! with `-D warnings` checks that rustdoc takes them without a warning.

fn generated(file: &str) -> String {
    std::fs::read_to_string(format!("{}/default/{file}", env!("OUT_DIR"))).unwrap()
}

/// The doc comment lines right above the first line (trimmed) starting with `item`, without
/// their `///` and the space after it.
fn docs_of(text: &str, item: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(item))
        .unwrap_or_else(|| panic!("no `{item}` in the generated file"));
    let mut docs: Vec<String> = lines[..at]
        .iter()
        .rev()
        .take_while(|l| l.starts_with("///") || l.starts_with("#["))
        .filter_map(|l| l.strip_prefix("///"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l).to_string())
        .collect();
    docs.reverse();
    docs
}

/// The opening lines of the code blocks in a file's doc comments.
fn fences(text: &str) -> Vec<String> {
    let mut open = false;
    let mut openings = Vec::new();
    for line in text.lines().filter_map(|l| l.trim_start().strip_prefix("///")) {
        let line = line.trim();
        if line.starts_with("```") {
            if !open {
                openings.push(line.to_string());
            }
            open = !open;
        }
    }
    openings
}

#[test]
fn method_comments_fence_their_examples_as_text() {
    let text = generated("twosvc.rs");
    // The trait's method and the client's carry the same comment.
    for item in ["fn a1(", "pub async fn a1("] {
        let docs = docs_of(&text, item);
        let fenced: Vec<&str> = docs
            .iter()
            .filter(|l| l.starts_with("```"))
            .map(String::as_str)
            .collect();
        assert_eq!(fenced, ["```text", "```", "```text", "```"], "{item}: {docs:#?}");
        assert!(docs.iter().any(|l| l == "a1 --inner x"), "{docs:#?}");
        assert!(
            docs.iter().any(|l| l == "let reply = a.a1(inner).await?;"),
            "{docs:#?}"
        );
        assert_eq!(
            docs.last().map(String::as_str),
            Some(
                r"\[brackets\], a bare URL <https://example.com/spec> and a generic Option\<Box\<Inner\>\>."
            ),
            "{docs:#?}"
        );
    }
}

#[test]
fn trailing_comments_are_cleaned_too() {
    let text = generated("twosvc.rs");
    for item in ["fn b1(", "pub async fn b1("] {
        assert_eq!(
            docs_of(&text, item),
            ["Trailing: see <https://example.com/b1>."],
            "{item}"
        );
    }
}

#[test]
fn message_comments_fence_their_examples_as_text() {
    let docs = docs_of(&generated("kitchen.rs"), "pub struct Inner");
    assert!(docs.iter().any(|l| l.starts_with("```text")), "{docs:#?}");
    assert!(docs.iter().any(|l| l == "inner --name x"), "{docs:#?}");
}

#[test]
fn no_generated_code_block_is_rust() {
    for file in ["twosvc.rs", "kitchen.rs"] {
        let openings = fences(&generated(file));
        assert!(!openings.is_empty(), "{file} has examples");
        for opening in openings {
            assert!(opening.starts_with("```text"), "{file}: {opening}");
        }
    }
}
