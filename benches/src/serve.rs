//! Servers in their own processes: `frpc-bench serve ...` runs one framework and announces
//! `LISTENING <addr>` as its first line of stdout; [`Server::spawn`] starts such a child (this
//! same executable) and reads that line, so readiness needs no sleep.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use crate::frameworks::{self, Framework};
use crate::workload;

/// `frpc-bench serve`: serve one framework for the benchmark or for outside load generators.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Where to listen (`127.0.0.1:0` picks a port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: String,
    /// The framework served: frpc (= frpc-inline), frpc-inline, frpc-per-rpc, frpc-protobuf,
    /// frpc-plain, tonic, raw or raw-decode (the echo that decodes and encodes the messages).
    #[arg(long, default_value = "frpc", value_parser = served)]
    pub framework: Framework,
    /// frpc's handler concurrency (overrides the framework's): inline or per-rpc.
    #[arg(long, value_parser = ["inline", "per-rpc"])]
    pub concurrency: Option<String>,
    /// The framing of frpc and raw: frisbee (v0.11) or legacy (v0.10).
    #[arg(long, default_value = "frisbee")]
    pub framing: frpc::Framing,
    /// Worker threads of the server's runtime.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// Parses a served framework, where `frpc` means `frpc-inline`.
fn served(name: &str) -> Result<Framework, String> {
    match name {
        "frpc" => Ok(Framework::FrpcInline),
        other => other.parse(),
    }
}

impl ServeArgs {
    /// The framework to serve, with `--concurrency` applied.
    pub fn resolved(&self) -> Result<Framework, String> {
        match (self.framework, self.concurrency.as_deref()) {
            (Framework::FrpcInline | Framework::FrpcPerRpc, Some("inline")) => Ok(Framework::FrpcInline),
            (Framework::FrpcInline | Framework::FrpcPerRpc, Some(_)) => Ok(Framework::FrpcPerRpc),
            (_, Some(_)) => Err("--concurrency applies to frpc only".into()),
            (framework, None) => Ok(framework),
        }
    }
}

/// Runs `serve`: binds, prints `LISTENING <addr>`, serves until an error.
pub fn serve(args: &ServeArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let framework = args.resolved()?;
    workload::runtime(args.threads).block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.addr).await?;
        println!("LISTENING {}", listener.local_addr()?);
        frameworks::serve(framework, listener, args.framing).await
    })
}

/// A server child process; killed on drop.
#[derive(Debug)]
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Server {
    /// Starts `frpc-bench serve` for `framework` on 127.0.0.1 with `threads` worker threads and
    /// waits for its address.
    pub fn spawn(framework: Framework, framing: frpc::Framing, threads: usize) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
        let framing = match framing {
            frpc::Framing::Frisbee => "frisbee",
            frpc::Framing::Legacy => "legacy",
        };
        let mut child = Command::new(exe)
            .args(["serve", "--addr", "127.0.0.1:0", "--framework", framework.name()])
            .args(["--framing", framing, "--threads", &threads.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the {framework} server: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        let read = std::io::BufReader::new(stdout).read_line(&mut line);
        let server_addr = line
            .strip_prefix("LISTENING ")
            .and_then(|a| a.trim().parse().ok());
        // From here the child is killed on drop, even on the error path.
        let server = Server {
            child,
            addr: server_addr.unwrap_or_else(|| ([0, 0, 0, 0], 0).into()),
        };
        match (read, server_addr) {
            (Ok(_), Some(_)) => Ok(server),
            (read, _) => Err(format!("the {framework} server said {line:?} ({read:?})")),
        }
    }
}

impl Server {
    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn resolved(line: &[&str]) -> Result<Framework, String> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(line.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.serve.resolved()
    }

    #[test]
    fn frpc_means_inline_unless_concurrency_says_otherwise() {
        assert_eq!(resolved(&[]), Ok(Framework::FrpcInline));
        assert_eq!(resolved(&["--concurrency", "per-rpc"]), Ok(Framework::FrpcPerRpc));
        assert_eq!(
            resolved(&["--framework", "frpc-per-rpc", "--concurrency", "inline"]),
            Ok(Framework::FrpcInline)
        );
        assert_eq!(resolved(&["--framework", "raw"]), Ok(Framework::Raw));
        assert!(resolved(&["--framework", "tonic", "--concurrency", "inline"]).is_err());
        assert!(resolved(&["--framework", "grpc"]).is_err());
    }

    #[test]
    fn frpc_protobuf_is_served_when_named_but_not_run_by_default() {
        assert_eq!(
            resolved(&["--framework", "frpc-protobuf"]),
            Ok(Framework::FrpcProtobuf)
        );
        assert!(resolved(&["--framework", "frpc-protobuf", "--concurrency", "inline"]).is_err());
        assert!(!Framework::ALL.contains(&Framework::FrpcProtobuf));
    }

    #[test]
    fn frpc_plain_is_served_when_named_but_not_run_by_default() {
        assert_eq!(resolved(&["--framework", "frpc-plain"]), Ok(Framework::FrpcPlain));
        assert!(resolved(&["--framework", "frpc-plain", "--concurrency", "per-rpc"]).is_err());
        assert!(!Framework::ALL.contains(&Framework::FrpcPlain));
    }
}
