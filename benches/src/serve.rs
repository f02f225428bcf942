//! Servers in their own processes: `frpc-bench serve ...` runs one framework and announces
//! `LISTENING <addr>` as its first line of stdout; [`Server::spawn`] starts such a child (this
//! same executable) and reads that line, so readiness needs no sleep.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use crate::frameworks::{self, Framework};
use crate::workload;

/// Options of `serve`.
#[derive(Debug, Clone)]
pub struct ServeArgs {
    /// Where to listen (`127.0.0.1:0` picks a port).
    pub addr: String,
    /// The framework served.
    pub framework: Framework,
    /// The framing of frpc and raw.
    pub framing: frpc::Framing,
}

impl ServeArgs {
    /// Parses `--addr A --framework frpc|frpc-inline|frpc-per-rpc|tonic|raw
    /// [--framing frisbee|legacy] [--concurrency inline|per-rpc]`, in any order.
    pub fn parse(args: &[String]) -> Result<ServeArgs, String> {
        let (mut addr, mut framework, mut framing) = ("127.0.0.1:0".to_owned(), None, frpc::Framing::Frisbee);
        let mut concurrency = None;
        for pair in args.chunks(2) {
            let [flag, value] = pair else {
                return Err(format!("{} needs a value", pair[0]));
            };
            match flag.as_str() {
                "--addr" => addr = value.clone(),
                "--framework" if value == "frpc" => framework = Some(Framework::FrpcInline),
                "--framework" => framework = Some(value.parse()?),
                "--framing" => framing = value.parse()?,
                "--concurrency" => {
                    concurrency = Some(match value.as_str() {
                        "inline" => Framework::FrpcInline,
                        "per-rpc" => Framework::FrpcPerRpc,
                        other => return Err(format!("unknown concurrency {other:?} (inline, per-rpc)")),
                    })
                }
                other => return Err(format!("unknown serve argument {other:?}")),
            }
        }
        let framework = match (framework.unwrap_or(Framework::FrpcInline), concurrency) {
            (Framework::FrpcInline | Framework::FrpcPerRpc, Some(frpc)) => frpc,
            (_, Some(_)) => return Err("--concurrency applies to frpc only".into()),
            (framework, None) => framework,
        };
        Ok(ServeArgs {
            addr,
            framework,
            framing,
        })
    }
}

/// Runs `serve`: binds, prints `LISTENING <addr>`, serves until an error.
pub fn serve(args: &ServeArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    workload::runtime().block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.addr).await?;
        println!("LISTENING {}", listener.local_addr()?);
        frameworks::serve(args.framework, listener, args.framing).await
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
    /// Starts `frpc-bench serve` for `framework` on 127.0.0.1 and waits for its address.
    pub fn spawn(framework: Framework, framing: frpc::Framing) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
        let framing = match framing {
            frpc::Framing::Frisbee => "frisbee",
            frpc::Framing::Legacy => "legacy",
        };
        let mut child = Command::new(exe)
            .args(["serve", "--addr", "127.0.0.1:0", "--framework", framework.name()])
            .args(["--framing", framing])
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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
