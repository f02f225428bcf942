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
    /// A call's failure exits with its code, whether the server sent it or it came about on
    /// this side (a call's timeout is DEADLINE_EXCEEDED, 68, for a unary call and a stream
    /// alike; a request over the size limit RESOURCE_EXHAUSTED; a connection lost mid-call
    /// UNAVAILABLE), as grpcurl exits; what fails before any call (connecting, TLS, the
    /// configuration, a server that closed the connection before answering: see
    /// `Connect::client`) exits 1.
    fn from(err: frpc::Error) -> CliError {
        use frpc::Error;
        match err {
            Error::Status(status) => CliError::Status {
                code: status.code(),
                message: status.message().to_string(),
            },
            // Failing to reach the server (a TLS handshake's failure is an I/O error).
            Error::Connect { .. }
            | Error::Bind { .. }
            | Error::Io(_)
            | Error::Config(_)
            | Error::Metadata(_) => CliError::Other(flags_for_framings(err.to_string())),
            err => CliError::Status {
                code: err.code(),
                message: flags_for_framings(err.to_string()),
            },
        }
    }
}

/// The runtime's hint at a framing mismatch names `Framing::Legacy`; here the flag does it.
pub(crate) fn flags_for_framings(text: String) -> String {
    text.replace("Framing::Legacy", "--framing legacy")
        .replace("Framing::Frisbee", "--framing frisbee")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_hints_name_the_flag() {
        let reason = "peer closed the connection before sending a valid packet: ... This side uses \
                      Framing::Frisbee (frisbee-go >= v0.11); try Framing::Legacy";
        let err = CliError::from(frpc::Error::ConnectionClosed {
            reason: Some(reason.into()),
        });
        let text = err.to_string();
        assert!(
            text.ends_with("uses --framing frisbee (frisbee-go >= v0.11); try --framing legacy"),
            "{text}"
        );
    }

    #[test]
    fn local_failures_of_a_call_exit_with_their_code() {
        let timeout = CliError::from(frpc::Error::Timeout(std::time::Duration::from_millis(500)));
        assert_eq!(timeout.exit_code(), 64 + 4);
        assert!(timeout.to_string().contains("500ms"), "{timeout}");
        let config = CliError::from(frpc::Error::Config("connect_timeout is zero".into()));
        assert_eq!(config.exit_code(), 1);
    }
}
