//! [`CliError`]: why a command failed, and the exit status it leaves with.

/// Why a command failed, and the process's exit status for it.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The server answered the call with an error status.
    #[error("ERROR: {code} ({number}): {message}", number = *.code as u8)]
    Status {
        /// The status code.
        code: frpc::Code,
        /// The server's message.
        message: String,
    },
    /// Anything else: bad arguments, schemas, connections.
    #[error("error: {0}")]
    Other(String),
}

impl CliError {
    /// The exit status: 64 + the status code for a remote error (as grpcurl does), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Status { code, .. } => 64 + *code as i32,
            CliError::Other(_) => 1,
        }
    }
}

pub(crate) fn other(err: impl std::fmt::Display) -> CliError {
    CliError::Other(err.to_string())
}

impl From<frpc::Error> for CliError {
    fn from(err: frpc::Error) -> CliError {
        match err.status() {
            Some(status) => CliError::Status {
                code: status.code(),
                message: status.message().to_string(),
            },
            None => CliError::Other(err.to_string()),
        }
    }
}
