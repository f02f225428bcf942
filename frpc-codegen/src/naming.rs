//! Rust names for proto names, following prost-build 0.14's rules exactly (so the paths we
//! emit name the items prost generated).

use heck::{ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};

/// Makes `ident` usable as a Rust identifier, as prost-build does: keywords become raw
/// identifiers (`r#type`), the few that cannot be raw get a `_` suffix (`self_`), and a
/// leading digit gets a `_` prefix.
pub fn sanitize_identifier(ident: &str) -> String {
    match ident {
        "as" | "break" | "const" | "continue" | "else" | "enum" | "false" | "fn" | "for" | "if" | "impl"
        | "in" | "let" | "loop" | "match" | "mod" | "move" | "mut" | "pub" | "ref" | "return" | "static"
        | "struct" | "trait" | "true" | "type" | "unsafe" | "use" | "where" | "while" | "dyn"
        | "abstract" | "become" | "box" | "do" | "final" | "macro" | "override" | "priv" | "typeof"
        | "unsized" | "virtual" | "yield" | "async" | "await" | "try" | "gen" => format!("r#{ident}"),
        "_" | "super" | "self" | "Self" | "extern" | "crate" => format!("{ident}_"),
        s if s.starts_with(|c: char| c.is_numeric()) => format!("_{ident}"),
        _ => ident.to_string(),
    }
}

/// A field, module or method name: `lower_snake`, sanitized (prost's `to_snake`).
pub fn to_snake(s: &str) -> String {
    sanitize_identifier(&s.to_snake_case())
}

/// A type or variant name: `UpperCamel`, sanitized (prost's `to_upper_camel`).
pub fn to_upper_camel(s: &str) -> String {
    sanitize_identifier(&s.to_upper_camel_case())
}

/// A constant name: `SHOUTY_SNAKE` (`EchoStream` → `ECHO_STREAM`), sanitized.
pub fn to_const(s: &str) -> String {
    sanitize_identifier(&s.to_shouty_snake_case())
}

/// The module path segments of a proto package (`my.pkg` → `["my", "pkg"]`).
pub fn package_module(package: &str) -> Vec<String> {
    package
        .split('.')
        .filter(|s| !s.is_empty())
        .map(to_snake)
        .collect()
}

/// The file prost-build writes a package to (`my.pkg.rs`; `_.rs` without a package).
pub fn package_file_name(package: &str) -> String {
    let module = package_module(package);
    if module.is_empty() {
        "_.rs".to_string()
    } else {
        format!("{}.rs", module.join("."))
    }
}

/// The Rust path of the fully qualified proto type `fq_type` (with its leading dot) as seen
/// from the root module of `package`, computed exactly like prost-build's `resolve_ident`:
/// shared leading segments are skipped, each remaining package segment becomes `super`,
/// the rest become `snake_case` modules, and the last one the `UpperCamel` type name.
///
/// `resolve_path("capture", ".capture.SearchResponse.Result")` is `search_response::Result`;
/// `resolve_path("a.b", ".a.c.T")` is `super::c::T`.
pub fn resolve_path(package: &str, fq_type: &str) -> String {
    let fq_type = fq_type.strip_prefix('.').unwrap_or(fq_type);
    let mut local = package.split('.').filter(|s| !s.is_empty()).peekable();
    let mut ident_path = fq_type.split('.');
    let ident_type = ident_path.next_back().unwrap_or_default();
    let mut ident_path = ident_path.peekable();
    while local.peek().is_some() && local.peek() == ident_path.peek() {
        local.next();
        ident_path.next();
    }
    local
        .map(|_| "super".to_string())
        .chain(ident_path.map(to_snake))
        .chain(std::iter::once(to_upper_camel(ident_type)))
        .collect::<Vec<_>>()
        .join("::")
}

/// Doc comment lines as prost writes them: leading comments, a blank line, trailing comments,
/// each line indented by one space unless it already starts with exactly one.
pub fn doc_lines(leading: Option<&str>, trailing: Option<&str>) -> Vec<String> {
    let leading: Vec<&str> = leading.map_or(Vec::new(), |c| c.lines().collect());
    let trailing: Vec<&str> = trailing.map_or(Vec::new(), |c| c.lines().collect());
    let mut out: Vec<String> = leading.iter().map(|l| doc_line(l)).collect();
    if !leading.is_empty() && !trailing.is_empty() {
        out.push(String::new());
    }
    out.extend(trailing.iter().map(|l| doc_line(l)));
    out
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
    fn paths_like_prost() {
        assert_eq!(
            resolve_path("capture", ".capture.SearchResponse.Result"),
            "search_response::Result"
        );
        assert_eq!(resolve_path("capture", ".capture.Request"), "Request");
        assert_eq!(resolve_path("a.b", ".a.c.T"), "super::c::T");
        assert_eq!(resolve_path("", ".T"), "T");
        assert_eq!(resolve_path("x", ".y.z.T"), "super::y::z::T");
    }

    #[test]
    fn names_like_prost() {
        assert_eq!(to_snake("type"), "r#type");
        assert_eq!(to_snake("Message"), "message");
        assert_eq!(to_snake("sPrices"), "s_prices");
        assert_eq!(to_snake("self"), "self_");
        assert_eq!(to_upper_camel("search_response"), "SearchResponse");
        assert_eq!(to_const("EchoStream"), "ECHO_STREAM");
        assert_eq!(package_file_name("my.pkg"), "my.pkg.rs");
        assert_eq!(package_file_name(""), "_.rs");
    }
}
