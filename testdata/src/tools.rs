//! The third-party programs the tests run as peers, where `.ci/setup-*` installed them:
//! grpcurl (`.ci/setup-grpcurl`) and Python with grpcio (`.ci/setup-python`). A missing
//! tool fails the test with the command that installs it; it never skips.

use std::path::{Path, PathBuf};

/// `$var` when set, else `~/.local/<default>`; panics naming `.ci/<setup>` when it is not there.
pub fn tool(var: &str, default: &str, setup: &str) -> PathBuf {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").expect("HOME is set");
        Path::new(&home).join(".local").join(default)
    });
    assert!(
        path.exists(),
        "{} not found: run .ci/{setup} (or set {var})",
        path.display()
    );
    path
}

/// grpcurl: `$FRPC_GRPCURL`, else where `.ci/setup-grpcurl` puts it.
pub fn grpcurl() -> PathBuf {
    tool("FRPC_GRPCURL", "grpcurl-v1.9.3/grpcurl", "setup-grpcurl")
}

/// The virtualenv's Python with grpcio: `$FRPC_PYTHON`, else where `.ci/setup-python` puts it.
pub fn python() -> PathBuf {
    tool("FRPC_PYTHON", "frpc-grpc-venv/bin/python", "setup-python")
}
