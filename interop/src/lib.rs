//! Helpers for the live interop tests: build the Go peers in `interop/go/` (one binary per
//! frisbee-go framing), start a Go server and wait for its `LISTENING <addr>` line, run a Go
//! client scenario, and start the Rust capture server ([`InteropService`]) in-process.
//!
//! The Go peers implement fRPC's conventions by hand on frisbee-go and polyglot/v2 (frpc-go itself
//! is not on the module proxy): `v010` builds against frisbee-go v0.10.2 (legacy 8-byte header),
//! `v011` against v0.11.0 (10-byte header with magic, 5 MiB limit).
//!
//! A missing Go toolchain is a test **failure**, never a skip: run `.ci/setup-go`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use frpc::{Concurrency, Context, Framing, Status, StreamSender, Streaming};
use frpc_examples::capture::{CaptureService, pb};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

/// Why a first Go build can fail where later ones do not.
const GO_BUILD_HINT: &str = "the first build downloads modules through GOPROXY";
/// How long a Go server may take to print its `LISTENING` line.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The directory holding the Go sources (`interop/go`).
pub fn go_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("go")
}

/// The Go module of a framing's peer binary, under [`go_dir`].
pub fn module_name(framing: Framing) -> &'static str {
    match framing {
        Framing::Legacy => "v010",
        Framing::Frisbee => "v011",
    }
}

/// The frisbee-go version a framing's peer is built against.
pub fn frisbee_version(framing: Framing) -> &'static str {
    match framing {
        Framing::Legacy => "v0.10.2",
        Framing::Frisbee => "v0.11.0",
    }
}

/// The oldest Go that builds frisbee-go (its go.mod says `go 1.22`; it uses `errors.Join`).
const MIN_GO_MINOR: u32 = 22;

/// The `go` command: `$FRPC_INTEROP_GO`, else the first Go >= 1.22 among `go` on `PATH`,
/// `/usr/local/go/bin/go`, `/usr/lib/go/bin/go` and `~/.local/go/bin/go` (where `.ci/setup-go`
/// installs it).
///
/// # Panics
/// When no suitable Go toolchain is found, with instructions: these tests are never skipped.
pub fn go_command() -> &'static Path {
    static GO: OnceLock<PathBuf> = OnceLock::new();
    GO.get_or_init(|| {
        if let Some(explicit) = std::env::var_os("FRPC_INTEROP_GO") {
            let explicit = PathBuf::from(explicit);
            assert!(
                go_version(&explicit).is_some(),
                "FRPC_INTEROP_GO={} does not run `go env GOVERSION`; unset it or point it at Go >= 1.{MIN_GO_MINOR}",
                explicit.display()
            );
            return explicit;
        }
        let mut candidates = Vec::new();
        if let Some(path) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("go")));
        }
        candidates.push(PathBuf::from("/usr/local/go/bin/go"));
        candidates.push(PathBuf::from("/usr/lib/go/bin/go"));
        if let Some(home) = std::env::var_os("HOME") {
            candidates.push(Path::new(&home).join(".local/go/bin/go"));
        }
        let mut too_old = Vec::new();
        for candidate in candidates {
            match go_version(&candidate) {
                Some(minor) if minor >= MIN_GO_MINOR => return candidate,
                Some(minor) => too_old.push(format!("{} (go1.{minor})", candidate.display())),
                None => {}
            }
        }
        let too_old = if too_old.is_empty() {
            String::new()
        } else {
            format!(" Too old: {}.", too_old.join(", "))
        };
        panic!(
            "\n\nNo Go toolchain >= 1.{MIN_GO_MINOR} was found, and the interop tests need one (they are \
             never skipped).{too_old}\n\
             Install it with `bash .ci/setup-go` (downloads the official toolchain through the Go module\n\
             proxy into /usr/local/go as root, else ~/.local/go), or install Go from https://go.dev/dl/\n\
             and put `go` on PATH, or point FRPC_INTEROP_GO at a `go` binary.\n\n"
        )
    })
}

/// The minor version N of the Go 1.N at `go`, when it runs.
fn go_version(go: &Path) -> Option<u32> {
    let output = Command::new(go)
        .args(["env", "GOVERSION"])
        .env("GOTOOLCHAIN", "local")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let version = String::from_utf8_lossy(&output.stdout);
    let minor: String = version
        .trim()
        .strip_prefix("go1.")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    minor.parse().ok()
}

/// A `go` command run in `dir`, isolated from any enclosing `go.work` and from global Go
/// settings that would change the build: modules are resolved from the committed go.mod/go.sum
/// only (`-mod=readonly`, so the checksum database is never consulted), and the toolchain found
/// by [`go_command`] is used as it is (no `GOTOOLCHAIN` switch). `GOPROXY` is left to the
/// environment (the default module proxy, or a mirror).
pub fn go(dir: &Path) -> Command {
    let mut cmd = Command::new(go_command());
    cmd.current_dir(dir)
        .env("GOWORK", "off")
        .env("GOFLAGS", "-mod=readonly -buildvcs=false")
        .env("GOTOOLCHAIN", "local");
    cmd
}

fn output_text(output: &Output) -> String {
    format!(
        "status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Where built peers go: `<target>/<profile>/frpc-interop-go/`, beside the test binaries.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // <target>/<profile>/deps/<test-binary>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    profile_dir.join("frpc-interop-go")
}

/// The peer binary of a framing, built once per test process (`go build` is incremental, so this
/// also picks up edits). Builds go to a per-process temporary name and are renamed into place,
/// so test processes running at once never see a half-written binary.
///
/// # Panics
/// When Go is missing or the build fails.
pub fn peer_binary(framing: Framing) -> &'static Path {
    static V010: OnceLock<PathBuf> = OnceLock::new();
    static V011: OnceLock<PathBuf> = OnceLock::new();
    let cell = match framing {
        Framing::Legacy => &V010,
        Framing::Frisbee => &V011,
    };
    cell.get_or_init(|| {
        let module = module_name(framing);
        let dir = bin_dir();
        std::fs::create_dir_all(&dir).expect("create the Go binary directory");
        let bin = dir.join(format!("frpc-peer-{module}"));
        let tmp = dir.join(format!("frpc-peer-{module}.{}.tmp", std::process::id()));
        let output = go(&go_dir().join(module))
            .args(["build", "-buildvcs=false", "-o"])
            .arg(&tmp)
            .arg(".")
            .output()
            .expect("run go build");
        assert!(
            output.status.success(),
            "building the Go peer {module} (frisbee-go {}) failed ({GO_BUILD_HINT}; \
             run `bash .ci/setup-go` to pre-download):\n{}",
            frisbee_version(framing),
            output_text(&output)
        );
        std::fs::rename(&tmp, &bin).expect("move the Go peer into place");
        bin
    })
}

/// A Go peer server, killed when dropped (its stdin closing also stops it).
#[derive(Debug)]
pub struct GoServer {
    child: Child,
    addr: SocketAddr,
    framing: Framing,
    _stdin: Option<ChildStdin>,
    _stdout: Lines<BufReader<ChildStdout>>,
}

impl GoServer {
    /// Builds (once) and starts the Go server of `framing` on a free loopback port, and waits
    /// for its `LISTENING <addr>` line.
    ///
    /// # Panics
    /// When the server cannot be built or started.
    pub async fn start(framing: Framing) -> GoServer {
        let bin = peer_binary(framing);
        let mut child = tokio::process::Command::new(bin)
            .args(["server", "--addr", "127.0.0.1:0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let first = tokio::time::timeout(SERVER_START_TIMEOUT, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the Go server printed nothing for {SERVER_START_TIMEOUT:?}"))
            .expect("reading the Go server's stdout");
        let Some(line) = first else {
            let status = child.wait().await;
            panic!("the Go server exited before listening: {status:?}");
        };
        let addr = line
            .strip_prefix("LISTENING ")
            .and_then(|a| a.trim().parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from the Go server: {line:?}"));
        GoServer {
            child,
            addr,
            framing,
            _stdin: stdin,
            _stdout: lines,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Whether the process is still running (it must survive everything the tests throw at it).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// What a Go client scenario printed, and whether it passed.
#[derive(Debug)]
pub struct ScenarioRun {
    /// Exit status 0.
    pub success: bool,
    /// Everything it printed, for assertion messages.
    pub report: String,
}

/// Runs the Go client of `framing` with `scenario` against `addr`, bounded by `timeout` (the
/// client also bounds itself a little earlier, to report which step hung).
///
/// # Panics
/// When the client cannot be built or started, or exceeds `timeout`.
pub async fn run_go_client(
    framing: Framing,
    addr: SocketAddr,
    scenario: &str,
    timeout: Duration,
) -> ScenarioRun {
    let bin = peer_binary(framing);
    let inner = timeout
        .saturating_sub(Duration::from_secs(5))
        .max(Duration::from_secs(1));
    let child = tokio::process::Command::new(bin)
        .arg("client")
        .arg("--addr")
        .arg(addr.to_string())
        .args(["--scenario", scenario])
        .arg(format!("--timeout={}ms", inner.as_millis()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("Go client scenario {scenario} did not finish within {timeout:?}"))
        .expect("waiting for the Go client");
    ScenarioRun {
        success: output.status.success(),
        report: format!(
            "Go client (frisbee-go {}) scenario {scenario} against {addr}\n{}",
            frisbee_version(framing),
            output_text(&output)
        ),
    }
}

/// The capture behaviour (`frpc_examples::capture`), plus two Go never shows: an Upload whose
/// first message is `early` is answered at once (`Response { message: "early" }`) without
/// reading the rest, so the client's later messages reach a finished stream; and an Echo of
/// `slow-*` is answered after 300 ms (calls that are still running when a test shuts the
/// server down).
#[derive(Debug, Clone, Copy, Default)]
pub struct InteropService;

impl pb::EchoService for InteropService {
    async fn echo(&self, ctx: &Context, request: pb::Request) -> Result<pb::Response, Status> {
        if request.message.starts_with("slow-") {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        CaptureService.echo(ctx, request).await
    }

    async fn echo_stream(
        &self,
        ctx: &Context,
        inbound: Streaming<pb::Request>,
        outbound: StreamSender<pb::Response>,
    ) -> Result<(), Status> {
        CaptureService.echo_stream(ctx, inbound, outbound).await
    }

    async fn testy(
        &self,
        ctx: &Context,
        request: pb::SearchResponse,
    ) -> Result<pb::StockPricesWrapper, Status> {
        CaptureService.testy(ctx, request).await
    }

    async fn search(
        &self,
        ctx: &Context,
        request: pb::SearchResponse,
        outbound: StreamSender<pb::Response>,
    ) -> Result<(), Status> {
        CaptureService.search(ctx, request, outbound).await
    }

    async fn upload(&self, _ctx: &Context, mut inbound: Streaming<pb::Data>) -> Result<pb::Response, Status> {
        let mut count = 0;
        while let Some(data) = inbound.message().await? {
            if count == 0 && data.message == "early" {
                return Ok(pb::Response {
                    message: "early".into(),
                    test: None,
                });
            }
            count += 1;
        }
        Ok(pb::Response {
            message: format!("got {count}"),
            test: None,
        })
    }
}

/// The Rust [`InteropService`] server on a free loopback port, aborted on drop.
#[derive(Debug)]
pub struct RustServer {
    addr: SocketAddr,
    task: JoinHandle<Result<(), frpc::Error>>,
}

impl RustServer {
    /// Starts it with `framing` and Go's default concurrency (a task per RPC).
    pub async fn start(framing: Framing) -> RustServer {
        RustServer::start_with(framing, |builder| builder).await
    }

    /// Starts it as [`RustServer::start`] does, with `configure` adding to the builder
    /// (layers, more services).
    pub async fn start_with(
        framing: Framing,
        configure: impl FnOnce(frpc::Builder) -> frpc::Builder,
    ) -> RustServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let builder = frpc::Server::builder()
            .framing(framing)
            .concurrency(Concurrency::PerRpc)
            .add_service(pb::EchoServiceServer::new(InteropService));
        let server = configure(builder)
            .build()
            .expect("the services and routes do not conflict");
        let task = tokio::spawn(async move { server.serve_listener(listener).await });
        RustServer { addr, task }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether it is still serving.
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }
}

impl Drop for RustServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A client configuration with `framing` and otherwise the defaults.
pub fn client_config(framing: Framing) -> frpc::ClientConfig {
    frpc::ClientConfig::default().connection(frpc::ConnectionConfig::default().framing(framing))
}

/// The other framing.
pub fn other(framing: Framing) -> Framing {
    match framing {
        Framing::Legacy => Framing::Frisbee,
        Framing::Frisbee => Framing::Legacy,
    }
}

/// Turns `async fn name(framing: Framing)` tests of the calling module into two tokio tests
/// each, `legacy_v0_10::name` and `frisbee_v0_11::name`.
#[macro_export]
macro_rules! both_framings {
    ($($name:ident),* $(,)?) => {
        mod legacy_v0_10 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(::frpc::Framing::Legacy).await;
                }
            )*
        }
        mod frisbee_v0_11 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(::frpc::Framing::Frisbee).await;
                }
            )*
        }
    };
}
