//! The benchmark proto's `BenchmarkService`, implemented once for the gRPC face's tests (as
//! `streams_svc` is for `proto/streams.proto`): it behaves by the request's text, and reports
//! what its handler saw (deadlines, cancels) on a channel.

#![allow(dead_code, reason = "each test file uses its part")]

use frpc_bench::frameworks::frpc::pb as fpb;
use tokio::sync::mpsc;

/// What the handler saw.
pub type Events = mpsc::UnboundedSender<String>;

/// Behaves by the request's text:
/// - `status:N`: fails with code `N` and the message `failed with <CODE>`;
/// - `meta`: request metadata `x-user` comes back as the reply's text and as response metadata
///   `x-echo-user`, `x-trace-bin` as `x-echo-bin`;
/// - `deadline`, `hang`: reports `<text> <has deadline>`, then waits forever; a task reports
///   `<text> cancelled` once the context is cancelled;
/// - `panic`: panics;
/// - anything else: echoed.
///
/// `Blob` echoes its bytes. Events nobody receives are dropped.
pub struct Svc {
    pub events: Events,
}

impl Svc {
    /// A service, and the receiver of its events.
    pub fn new() -> (Svc, mpsc::UnboundedReceiver<String>) {
        let (events, rx) = mpsc::unbounded_channel();
        (Svc { events }, rx)
    }

    /// Reports the hang, watches for the cancel, and never returns.
    async fn hang(&self, ctx: &frpc::Context, text: String) -> Result<fpb::Response, frpc::Status> {
        let deadline = ctx.deadline().is_some();
        let _ = self.events.send(format!("{text} {deadline}"));
        // A task outliving the handler sees the cancel through its clone of ctx.
        let (ctx, events) = (ctx.clone(), self.events.clone());
        tokio::spawn(async move {
            ctx.cancelled().await;
            let _ = events.send(format!("{text} cancelled"));
        });
        std::future::pending().await
    }
}

/// An frpc server of [`Svc`] serving fRPC and gRPC on one port (`grpc(true)`) with `config`,
/// on 127.0.0.1:0; its address and the service's events.
pub async fn shared_port(
    config: frpc::ServerConfig,
) -> (std::net::SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (svc, events) = Svc::new();
    let bound = frpc::Server::builder()
        .config(config)
        .grpc(true)
        .add_service(fpb::BenchmarkServiceServer::new(svc))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, events)
}

/// Sets the response metadata of a `meta` call, and answers with the caller's `x-user`.
fn echo_metadata(ctx: &frpc::Context) -> fpb::Response {
    let user = ctx.metadata().get("x-user").unwrap_or("-").to_string();
    let mut reply = frpc::Metadata::new();
    reply.insert("x-echo-user", &user).unwrap();
    let bin = ctx.metadata().get_bin("x-trace-bin").unwrap_or(b"").to_vec();
    reply.insert_bin("x-echo-bin", bin).unwrap();
    // `x-set-<key>: v` sets `<key>: v` (keys a tonic client cannot send itself).
    for (key, value) in ctx.metadata().iter() {
        if let Some(key) = key.strip_prefix("x-set-") {
            reply.insert(key, std::str::from_utf8(value).unwrap()).unwrap();
        }
    }
    ctx.set_response_metadata(reply);
    fpb::Response { message: user }
}

impl fpb::BenchmarkService for Svc {
    async fn benchmark(
        &self,
        ctx: &frpc::Context,
        request: fpb::Request,
    ) -> Result<fpb::Response, frpc::Status> {
        let text = request.message;
        if let Some(code) = text.strip_prefix("status:") {
            let code = frpc::Code::from_u8(code.parse().unwrap()).unwrap();
            return Err(frpc::Status::with_code(code, format!("failed with {code}")));
        }
        match text.as_str() {
            "meta" => Ok(echo_metadata(ctx)),
            "deadline" | "hang" => self.hang(ctx, text).await,
            "panic" => panic!("on purpose"),
            _ => match text.strip_prefix("grow:") {
                // A reply of that many bytes.
                Some(n) => Ok(fpb::Response {
                    message: "x".repeat(n.parse().unwrap()),
                }),
                None => Ok(fpb::Response { message: text }),
            },
        }
    }

    async fn blob(
        &self,
        _ctx: &frpc::Context,
        request: fpb::BlobRequest,
    ) -> Result<fpb::BlobResponse, frpc::Status> {
        Ok(fpb::BlobResponse { data: request.data })
    }
}
