//! Proto comments become doc comments rustdoc reads as the comment's text: every code block
//! fenced as `text` (an indented example would otherwise be a Rust doctest, failing the
//! user's `cargo test`), HTML-looking text and brackets escaped, bare URLs linked. The
//! comments are those of `proto/kitchen/services.proto` and `kitchen.proto`; CI's `cargo doc`
//! with `-D warnings` checks that rustdoc takes them without a warning. `disable_comments`
//! leaves out those it matches.

fn generated(file: &str) -> String {
    generated_in("default", file)
}

/// A file generated in the builder configuration `config` (`build.rs`).
fn generated_in(config: &str, file: &str) -> String {
    std::fs::read_to_string(format!("{}/{config}/{file}", env!("OUT_DIR"))).unwrap()
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
    // A `rust` block, which prost fences as `compile_fail`.
    let docs = docs_of(&generated("kitchen.rs"), "pub struct Edge");
    let at = docs.iter().position(|l| l == "let edge = Edge::default();");
    assert_eq!(at.map(|at| docs[at - 1].as_str()), Some("```text"), "{docs:#?}");
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

/// `disable_comments` (the `tuned` configuration) leaves out what it matches, and only that.
#[test]
fn disable_comments_leaves_out_only_the_matching_comments() {
    let (default, tuned) = (
        generated_in("default", "twosvc.rs"),
        generated_in("tuned", "twosvc.rs"),
    );
    let has = |docs: Vec<String>, text: &str| docs.iter().any(|l| l.contains(text));
    // Method A1 is matched (in the trait and the client), and so is service B, with B1's
    // trailing comment.
    for (item, text) in [
        ("fn a1(", "a1 --inner x"),
        ("pub async fn a1(", "a1 --inner x"),
        ("pub async fn b1(", "example.com/b1"),
    ] {
        assert!(has(docs_of(&default, item), text), "{item}");
        assert!(
            !has(docs_of(&tuned, item), text),
            "{item}: {:?}",
            docs_of(&tuned, item)
        );
    }
    // Service A is not: its comment stays.
    assert_eq!(docs_of(&tuned, "pub trait A:"), ["Service A."]);

    // prost-build's part: `Inner`'s comment is gone, `Edge`'s stays.
    let (default, tuned) = (
        generated_in("default", "kitchen.rs"),
        generated_in("tuned", "kitchen.rs"),
    );
    assert!(!docs_of(&default, "pub struct Inner").is_empty());
    assert!(docs_of(&tuned, "pub struct Inner").is_empty());
    assert_eq!(
        docs_of(&tuned, "pub struct Edge"),
        docs_of(&default, "pub struct Edge")
    );
}
