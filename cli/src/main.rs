//! `frpc`: a command-line client for fRPC servers, frpc-rs's and Go's alike. `frpc call` sends a
//! JSON request to a method and prints the JSON reply; `frpc list` and `frpc describe` show what
//! a reflecting frpc server serves. See `frpc --help` and `docs/guide/operating-frpc.md`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use frpc::Framing;
use frpc_cli::bench::{self, Load};
use frpc_cli::commands::{self, CliError, Connect, Schema, Tls};

/// A command-line client for fRPC servers (frpc-rs and Go fRPC).
#[derive(Debug, Parser)]
#[command(name = "frpc", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Calls a method with JSON requests and prints each JSON reply on a line of its own.
    ///
    /// Unary and server-streaming methods take one request; client and bidi streams send each
    /// JSON value of standard input as it completes (or each JSON value of the argument).
    Call {
        #[command(flatten)]
        connect: ConnectArgs,
        #[command(flatten)]
        schema: SchemaArgs,
        /// The method: `package.Service/Method`.
        method: String,
        /// The request in proto3 JSON, `@file` to read it from a file, or `-` (the default) for
        /// standard input.
        request: Option<String>,
        /// Also prints the response metadata the server sent (tonic's headers and trailers) to
        /// standard error, `key: value` per line (a `-bin` key's value in base64), after the
        /// replies or the error; `(none)` when it sent none; nothing when no call was made.
        #[arg(short = 'v', long)]
        verbose: bool,
    },
    /// Lists the services a server serves (reflection, or the --proto files).
    List {
        #[command(flatten)]
        connect: ConnectArgs,
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Shows a service's methods (operation numbers included), one method, a message's fields
    /// or an enum's values.
    Describe {
        #[command(flatten)]
        connect: ConnectArgs,
        #[command(flatten)]
        schema: SchemaArgs,
        /// `package.Service`, `package.Service/Method`, `package.Message` or `package.Enum`.
        name: String,
    },
    /// Load-tests a unary method: `-c` calls in flight until `-n` calls are made or
    /// `--duration` passes; prints RPC/s, latency percentiles and the calls by status code.
    Bench {
        #[command(flatten)]
        connect: ConnectArgs,
        #[command(flatten)]
        schema: SchemaArgs,
        /// The method: `package.Service/Method`.
        method: String,
        /// The request in proto3 JSON, `@file`, or `-` (the default) for standard input; every
        /// call sends it.
        request: Option<String>,
        /// Calls in flight at once (at most 100000; no more than -n are kept in flight).
        #[arg(short = 'c', long, default_value_t = 16)]
        concurrency: usize,
        /// Calls in all (default 1000 without --duration).
        #[arg(short = 'n', long)]
        total: Option<u64>,
        /// Seconds to run (fractions allowed); with -n, whichever ends first. Calls still in
        /// flight when it ends are abandoned, uncounted.
        #[arg(long)]
        duration: Option<f64>,
        /// Connections the calls are spread over (at most -c).
        #[arg(long, default_value_t = 1)]
        connections: usize,
        /// Calls per second to offer, all together (ghz's `--rps`): each of the `-c` calls in
        /// flight starts on a schedule instead of as soon as the one before it completes.
        #[arg(long)]
        rps: Option<f64>,
        /// Prints the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Checks a server's health (frpc's health service): prints SERVING, NOT_SERVING, … and
    /// exits 0 only when serving (4 when not, as grpc_health_probe).
    Health {
        #[command(flatten)]
        connect: ConnectArgs,
        /// The service to check (default: the whole server).
        #[arg(default_value = "")]
        service: String,
        /// Prints every status change until interrupted (or the server ends the watch).
        #[arg(long)]
        watch: bool,
    },
}

/// What a command leaves: text to print, nothing more (it printed as it went), or a health
/// verdict already printed.
enum Outcome {
    Print(String),
    Done,
    Healthy(bool),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FramingArg {
    /// frisbee-go v0.11 and later (frpc's default).
    Frisbee,
    /// frisbee-go v0.10 and earlier.
    Legacy,
}

#[derive(Debug, Args)]
struct ConnectArgs {
    /// The server, `host:port`.
    addr: String,
    /// Request metadata, `key:value` (repeatable, one value per key); keys are lower-cased,
    /// and a `-bin` key's value is base64, as grpcurl reads them.
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// Call timeout in seconds (fractions allowed); it also bounds connecting.
    #[arg(long)]
    timeout: Option<f64>,
    /// The server's packet framing.
    #[arg(long, value_enum, default_value = "frisbee")]
    framing: FramingArg,
    /// Plain fRPC: offer no frpc extensions (no status codes, metadata or reflection).
    #[arg(long)]
    no_extensions: bool,
    /// Connect over TLS, checking the server's certificate against the system's roots.
    #[arg(long)]
    tls: bool,
    /// Connect over TLS, trusting the certificates of this PEM file (implies --tls).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host of the address);
    /// with --tls or --ca only.
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
}

#[derive(Debug, Args)]
struct SchemaArgs {
    /// A .proto file with the service (repeatable); without one, the server is asked through
    /// reflection.
    #[arg(long = "proto")]
    protos: Vec<PathBuf>,
    /// Where imports are searched (repeatable; default: each file's directory).
    #[arg(short = 'I', long = "import-path")]
    includes: Vec<PathBuf>,
}

impl ConnectArgs {
    fn connect(&self) -> Result<Connect, CliError> {
        let timeout = match self.timeout {
            Some(secs) => Some(seconds("--timeout", secs)?),
            None => None,
        };
        let tls = self.tls || self.ca.is_some();
        if let (Some(name), false) = (&self.server_name, tls) {
            // Plain TCP checks no certificate: the name would be silently ignored.
            return Err(CliError::Other(format!(
                "--server-name {name} names the certificate of a TLS server: add --tls or --ca FILE"
            )));
        }
        Ok(Connect {
            addr: self.addr.clone(),
            framing: match self.framing {
                FramingArg::Frisbee => Framing::Frisbee,
                FramingArg::Legacy => Framing::Legacy,
            },
            no_extensions: self.no_extensions,
            timeout,
            headers: self.headers.clone(),
            tls: tls.then(|| Tls {
                ca: self.ca.clone(),
                server_name: self.server_name.clone(),
            }),
        })
    }
}

impl SchemaArgs {
    fn schema(&self) -> Schema {
        Schema {
            protos: self.protos.clone(),
            includes: self.includes.clone(),
        }
    }
}

async fn run(command: Command) -> Result<Outcome, CliError> {
    let print = |text: &str| {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        // A closed stdout (`| head`) ends nothing here: the command still finishes.
        let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    };
    let text = match command {
        Command::Call {
            connect,
            schema,
            method,
            request,
            verbose,
        } => {
            let connect = connect.connect()?;
            let response = verbose.then(commands::Verbose::default);
            let call = commands::Call {
                method: &method,
                request: request.as_deref(),
                response_metadata: response.as_ref(),
            };
            let called = commands::call(&connect, &schema.schema(), call, print).await;
            if let Some(text) = response.as_ref().and_then(commands::Verbose::text) {
                to_stderr(&text);
            }
            called?;
            return Ok(Outcome::Done);
        }
        Command::List { connect, schema } => commands::list(&connect.connect()?, &schema.schema()).await,
        Command::Describe {
            connect,
            schema,
            name,
        } => commands::describe(&connect.connect()?, &schema.schema(), &name).await,
        Command::Bench {
            connect,
            schema,
            method,
            request,
            concurrency,
            total,
            duration,
            connections,
            rps,
            json,
        } => {
            let duration = match duration {
                Some(secs) => Some(seconds("--duration", secs)?),
                None => None,
            };
            if let Some(rps) = rps.filter(|r| !(r.is_finite() && *r > 0.0)) {
                return Err(CliError::Other(format!(
                    "--rps {rps}: give calls per second above 0"
                )));
            }
            let load = Load {
                concurrency,
                connections,
                total,
                duration,
                rps,
                progress: !json,
            };
            let connect = connect.connect()?;
            let summary =
                bench::bench(&connect, &schema.schema(), &method, request.as_deref(), &load).await?;
            Ok(match json {
                true => summary.json().to_string(),
                false => summary.text(),
            })
        }
        Command::Health {
            connect,
            service,
            watch,
        } => {
            let healthy = commands::health(&connect.connect()?, &service, watch, print).await?;
            return Ok(Outcome::Healthy(healthy));
        }
    };
    text.map(Outcome::Print)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A load run spreads its calls over every core; the other commands need one thread.
    let mut runtime = match cli.command {
        Command::Bench { .. } => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            to_stderr(&format!("error: cannot start the runtime: {err}\n"));
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli.command));
    // A read of standard input may still wait in the blocking pool (a stream that the server
    // or the deadline ended while the input stays open): dropping the runtime would wait for
    // it, so the process would outlive its command until the input closes.
    runtime.shutdown_background();
    match result {
        Ok(Outcome::Print(out)) => {
            // A closed stdout (`| head`) is no error: what was wanted was printed.
            use std::io::Write as _;
            let _ = writeln!(std::io::stdout().lock(), "{out}");
            ExitCode::SUCCESS
        }
        Ok(Outcome::Done | Outcome::Healthy(true)) => ExitCode::SUCCESS,
        // grpc_health_probe's "unhealthy" (2 is clap's usage error).
        Ok(Outcome::Healthy(false)) => ExitCode::from(4),
        Err(err) => {
            to_stderr(&format!("{err}\n"));
            ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(1))
        }
    }
}

/// Writes to standard error, ignoring a closed one (`2>&1 | head -1`): `eprint!` would panic,
/// and the exit status still says how the command went.
fn to_stderr(text: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// A flag's seconds as a duration: above zero (at least a nanosecond) and at most a year.
fn seconds(flag: &str, secs: f64) -> Result<Duration, CliError> {
    const YEAR: f64 = 365.0 * 24.0 * 3600.0;
    match Duration::try_from_secs_f64(secs) {
        Ok(duration) if !duration.is_zero() && secs <= YEAR => Ok(duration),
        _ => Err(CliError::Other(format!(
            "{flag} {secs}: give seconds above 0 and at most a year ({YEAR})"
        ))),
    }
}
