//! A tiny `--flag value` parser shared by the example programs (no dependency needed).

use std::str::FromStr;

/// The value after `--name`, parsed, or `default` when absent. Exits with a message on a bad
/// value.
pub fn flag<T: FromStr>(name: &str, default: T) -> T
where
    T::Err: std::fmt::Display,
{
    let args: Vec<String> = std::env::args().collect();
    let Some(pos) = args.iter().position(|a| a == name) else {
        return default;
    };
    let Some(raw) = args.get(pos + 1) else {
        exit(&format!("{name} needs a value"));
    };
    raw.parse()
        .unwrap_or_else(|err| exit(&format!("bad value {raw:?} for {name}: {err}")))
}

/// Parses a concurrency mode: `per-rpc`, `inline` or `limited:N`.
pub fn concurrency(raw: &str) -> Result<frpc::Concurrency, String> {
    match raw {
        "per-rpc" => Ok(frpc::Concurrency::PerRpc),
        "inline" => Ok(frpc::Concurrency::Inline),
        other => match other.strip_prefix("limited:").map(str::parse) {
            Some(Ok(n)) => Ok(frpc::Concurrency::Limited(n)),
            _ => Err(format!(
                "unknown concurrency {other:?} (per-rpc, inline or limited:N)"
            )),
        },
    }
}

fn exit(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}
