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

/// Whether prost-build's path `matcher` selects the proto element `full_path` (`.pkg.Msg`,
/// `.pkg.Msg.field`, `.pkg.Service`): the full path, one of its suffixes (`Msg.field`,
/// `field`), one of its prefixes (`.pkg`), or `.` for everything.
pub fn path_matches(matcher: &str, full_path: &str) -> bool {
    let suffixes = std::iter::successors(Some(full_path), |p| {
        p.split_once('.').map(|x| x.1).filter(|p| !p.is_empty())
    })
    .skip(1);
    let prefixes = std::iter::successors(Some(full_path), |p| {
        p.rsplit_once('.').map(|x| x.0).filter(|p| !p.is_empty())
    })
    .skip(1);
    std::iter::once(full_path)
        .chain(suffixes)
        .chain(prefixes)
        .chain(std::iter::once("."))
        .any(|p| p == matcher)
}

/// prost-build's `extern_path` table: proto packages or types (`.google.type`,
/// `.pkg.Money`) provided by other Rust code (`::google_types`, `crate::money::Money`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExternPaths {
    paths: Vec<(String, String)>,
}

impl ExternPaths {
    /// The table for `(proto_path, rust_path)` pairs. Proto paths must be fully qualified
    /// (`.pkg` or `.pkg.Type`), and each may appear once.
    pub fn new(paths: &[(String, String)]) -> Result<ExternPaths, String> {
        let mut out = ExternPaths::default();
        for (proto, rust) in paths {
            if !proto.starts_with('.') || proto.split('.').skip(1).any(str::is_empty) {
                return Err(format!(
                    "extern_path(\"{proto}\", \"{rust}\"): the proto path must be fully qualified \
                     (`.package` or `.package.Type`)"
                ));
            }
            if out.paths.iter().any(|(p, _)| p == proto) {
                return Err(format!("extern_path(\"{proto}\", ..) is given twice"));
            }
            if let Err(err) = syn::parse_str::<syn::Path>(rust) {
                return Err(format!(
                    "extern_path(\"{proto}\", \"{rust}\"): the Rust path is not a path: {err}"
                ));
            }
            out.paths.push((proto.clone(), rust.clone()));
        }
        Ok(out)
    }

    /// The Rust path of the fully qualified proto type `fq_type` (with its leading dot) when
    /// it is extern, exactly as prost-build's `ExternPaths::resolve_ident`: an exact entry
    /// wins; otherwise the longest matching package or type prefix, with the remaining
    /// segments as `snake_case` modules and an `UpperCamel` type name.
    pub fn resolve(&self, fq_type: &str) -> Option<String> {
        let get = |p: &str| self.paths.iter().find(|(k, _)| k == p).map(|(_, v)| v);
        if let Some(rust) = get(fq_type) {
            return Some(rust.clone());
        }
        for (idx, _) in fq_type.rmatch_indices('.') {
            if let Some(rust) = get(&fq_type[..idx]) {
                let mut segments = fq_type[idx + 1..].split('.');
                let ty = segments.next_back().map(to_upper_camel);
                let path: Vec<String> = rust
                    .split("::")
                    .chain(segments)
                    .enumerate()
                    .map(|(i, s)| {
                        if i == 0 && s == "crate" {
                            s.to_string()
                        } else {
                            to_snake(s)
                        }
                    })
                    .chain(ty)
                    .collect();
                return Some(path.join("::"));
            }
        }
        None
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
    fn extern_paths_like_prost() {
        let paths = ExternPaths::new(&[
            (".ext.Money".into(), "crate::money::Money".into()),
            (".shared.v1".into(), "::shared_types::v1".into()),
        ])
        .unwrap();
        assert_eq!(
            paths.resolve(".ext.Money").as_deref(),
            Some("crate::money::Money")
        );
        assert_eq!(paths.resolve(".ext.Order"), None);
        assert_eq!(
            paths.resolve(".shared.v1.Tag.Kind").as_deref(),
            Some("::shared_types::v1::tag::Kind")
        );
        assert!(ExternPaths::new(&[("ext.Money".into(), "x".into())]).is_err());
        assert!(matches!(
            ExternPaths::new(&[(".a".into(), "x".into()), (".a".into(), "y".into())]),
            Err(e) if e.contains("twice")
        ));
    }

    #[test]
    fn paths_match_like_prost() {
        for m in [".", ".pkg", ".pkg.Svc", "pkg.Svc", "Svc"] {
            assert!(path_matches(m, ".pkg.Svc"), "{m}");
        }
        for m in [".pk", "Sv", ".other", "pkg"] {
            assert!(!path_matches(m, ".pkg.Svc"), "{m}");
        }
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
