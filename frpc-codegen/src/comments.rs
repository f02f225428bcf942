//! Proto comments as doc comments: the Markdown cleaned as prost-build's `cleanup-markdown`
//! cleans the comments of the messages it generates, so that a service's and a method's
//! comments cannot break the user's build either: an indented example in a comment is a Rust
//! doctest to rustdoc, and fails the user's `cargo test`. Beyond prost's cleanup, HTML-looking
//! text and bare URLs are made plain text and links ([`doc_safe`]), so `cargo doc` stays quiet.
//! prost's own output gets one fix ([`prost_fences_as_text`]): its `rust` examples run no more.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// prost-build's output with the `rust` code blocks of its doc comments fenced as `text`:
/// prost fences them as `compile_fail`, which rustdoc still runs as a doctest (one that fails
/// the user's `cargo test` whenever the example compiles). A `compile_fail` block of a proto
/// comment is no test either.
pub(crate) fn prost_fences_as_text(code: String) -> String {
    const FENCE: &str = "/// ```compile_fail";
    if !code.contains(FENCE) {
        return code;
    }
    let mut out = String::with_capacity(code.len());
    for line in code.split_inclusive('\n') {
        match line.trim_start().strip_prefix(FENCE) {
            Some(rest) if rest.trim().is_empty() => {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(indent);
                out.push_str("/// ```text");
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Doc comment lines for a proto element's comments: leading comments, a blank line, trailing
/// comments (as prost writes them), each line indented by one space unless it already starts
/// with exactly one.
pub(crate) fn doc_lines(leading: Option<&str>, trailing: Option<&str>) -> Vec<String> {
    let leading = leading.map_or(Vec::new(), cleaned_lines);
    let trailing = trailing.map_or(Vec::new(), cleaned_lines);
    let mut out: Vec<String> = leading.iter().map(|l| doc_line(l)).collect();
    if !leading.is_empty() && !trailing.is_empty() {
        out.push(String::new());
    }
    out.extend(trailing.iter().map(|l| doc_line(l)));
    out
}

/// `comment` parsed as Markdown and written back made safe for rustdoc ([`doc_safe`]). A
/// comment the writer cannot render stays as it was.
fn cleaned_lines(comment: &str) -> Vec<String> {
    let options = pulldown_cmark_to_cmark::Options {
        code_block_token_count: 3,
        ..Default::default()
    };
    let events = Parser::new_ext(comment, Options::all() - Options::ENABLE_SMART_PUNCTUATION);
    let mut out = String::with_capacity(comment.len() + 32);
    match pulldown_cmark_to_cmark::cmark_with_options(doc_safe(events).into_iter(), &mut out, options) {
        Ok(_) => out.lines().map(str::to_owned).collect(),
        Err(_) => comment.lines().map(str::to_owned).collect(),
    }
}

/// A comment's Markdown events, changed where rustdoc would read them other than as the
/// comment's text:
/// - every code block is fenced as `text` (rustdoc compiles and runs untagged and `rust`
///   blocks as doctests);
/// - HTML is text (`Option<Box<Chain>>` is not an unclosed `<Chain>` tag);
/// - a bare `http(s)://` URL is an autolink (`<…>`, not a `rustdoc::bare_urls` warning).
fn doc_safe<'a>(events: impl Iterator<Item = Event<'a>>) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    // Text outside code blocks, links and images, gathered until the next other event.
    let mut prose = String::new();
    // Inside a code block, a link or an image: text stays as it is.
    let mut verbatim = 0usize;
    for event in events {
        let event = match event {
            Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
            Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
            Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
            Event::Start(Tag::CodeBlock(_)) => {
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced("text".into())))
            }
            event => event,
        };
        match &event {
            Event::Text(text) if verbatim == 0 => {
                prose.push_str(text);
                continue;
            }
            Event::Start(Tag::CodeBlock(_) | Tag::Link { .. } | Tag::Image { .. }) => verbatim += 1,
            Event::End(TagEnd::CodeBlock | TagEnd::Link | TagEnd::Image) => {
                verbatim = verbatim.saturating_sub(1)
            }
            _ => {}
        }
        push_prose(&mut out, &mut prose);
        out.push(event);
    }
    push_prose(&mut out, &mut prose);
    out
}

/// Pushes the gathered `prose` as text, its bare URLs as autolinks, and empties it.
fn push_prose(out: &mut Vec<Event<'_>>, prose: &mut String) {
    let mut rest = prose.as_str();
    while let Some((start, end)) = next_url(rest) {
        push_text(out, &rest[..start]);
        let url = CowStr::from(rest[start..end].to_owned());
        out.push(Event::Start(Tag::Link {
            link_type: LinkType::Autolink,
            dest_url: url.clone(),
            title: "".into(),
            id: "".into(),
        }));
        out.push(Event::Text(url));
        out.push(Event::End(TagEnd::Link));
        rest = &rest[end..];
    }
    push_text(out, rest);
    prose.clear();
}

/// The characters the writer escapes when they start a text event.
const SPECIAL: &str = "#\\_*<>`|[]";

/// Pushes `text` as text events, one starting at each of Markdown's special characters: the
/// writer escapes only an event's first character (the parser splits text there), so each is
/// then written escaped, as text.
fn push_text(out: &mut Vec<Event<'_>>, text: &str) {
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if at > start && SPECIAL.contains(c) {
            out.push(Event::Text(text[start..at].to_owned().into()));
            start = at;
        }
    }
    if start < text.len() {
        out.push(Event::Text(text[start..].to_owned().into()));
    }
}

/// The byte range of the first bare `http(s)://` URL in `text`: up to a space or a `)` (as
/// prost-build's rule), without the punctuation of the sentence around it.
fn next_url(text: &str) -> Option<(usize, usize)> {
    let start = ["https://", "http://"]
        .iter()
        .filter_map(|scheme| text.find(scheme))
        .min()?;
    let from = &text[start..];
    let len = from
        .find(|c: char| c.is_whitespace() || matches!(c, ')' | '<' | '>' | '"'))
        .unwrap_or(from.len());
    let url = from[..len].trim_end_matches(['.', ',', ';', ':', '!', '?', '\'']);
    Some((start, start + url.len()))
}

fn doc_line(line: &str) -> String {
    let mut chars = line.chars();
    let indent = chars
        .next()
        .is_some_and(|c| c != ' ' || chars.next() == Some(' '));
    if indent {
        format!(" {line}")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_blocks_become_text() {
        let comment = " Called like this:\n\n     a1 --inner x\n\n ```rust\n fn main() {}\n ```\n";
        let lines = doc_lines(Some(comment), None);
        let text = lines.join("\n");
        assert!(!text.contains("```rust"), "{text}");
        assert_eq!(text.matches("```text").count(), 2, "{text}");
        assert!(text.contains("a1 --inner x"), "{text}");
    }

    #[test]
    fn prosts_compile_fail_fences_become_text() {
        let code = "/// A.\n///\n/// ```compile_fail\n/// x();\n/// ```\npub struct A {\n    /// ```compile_fail\n    pub x: i32,\n}\n/// ```compile_fail,ignore\n";
        assert_eq!(
            prost_fences_as_text(code.to_string()),
            "/// A.\n///\n/// ```text\n/// x();\n/// ```\npub struct A {\n    /// ```text\n    pub x: i32,\n}\n/// ```compile_fail,ignore\n"
        );
        assert_eq!(prost_fences_as_text("/// ```text\n".into()), "/// ```text\n");
    }

    #[test]
    fn html_is_text_and_urls_are_links() {
        let comment = " Returns Option<Box<Chain>>, see https://example.com/spec. <b>Bold</b>\n";
        assert_eq!(
            doc_lines(Some(comment), None),
            [r" Returns Option\<Box\<Chain\>\>, see <https://example.com/spec>. \<b\>Bold\</b\>"]
        );
    }

    #[test]
    fn links_and_code_stay() {
        let comment = " [Docs](https://example.com/a_b), <https://example.com/c>, `https://x.dev <T>` and [the spec].\n";
        assert_eq!(
            doc_lines(Some(comment), None),
            [
                r" [Docs](https://example.com/a_b), <https://example.com/c>, `https://x.dev <T>` and \[the spec\]."
            ]
        );
    }

    #[test]
    fn urls_end_before_punctuation_and_parentheses() {
        let url = |text: &'static str| next_url(text).map(|(start, end)| &text[start..end]);
        assert_eq!(url("(see https://a.dev/x_y)."), Some("https://a.dev/x_y"));
        assert_eq!(url("http://a, https://b"), Some("http://a"));
        assert_eq!(url("at <https://a.dev/x>"), Some("https://a.dev/x"));
        assert_eq!(next_url("no link here"), None);
    }

    #[test]
    fn leading_and_trailing_apart() {
        assert_eq!(
            doc_lines(Some(" Lead.\n"), Some(" Trail.\n")),
            [" Lead.", "", " Trail."]
        );
        assert_eq!(doc_lines(None, None), Vec::<String>::new());
    }
}
