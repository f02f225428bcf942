//! The EchoService of `proto/capture.proto`, behaving as the Go peers did when the captures in
//! `testdata/vectors/` were recorded. `capture-server` serves it; the replay and interop tests
//! run it in-process.

use frpc::{Concurrency, Context, Framing, Status, StreamSender, Streaming};
use tokio::net::TcpListener;

/// The code generated from `proto/capture.proto`.
#[allow(missing_docs)]
pub mod pb {
    frpc::include_proto!("capture");
}

use pb::{Data, Request, Response, SearchResponse, StockPricesWrapper};

/// The capture behaviour:
/// - Echo(req) → `Response { message: req.message, test: Data { message: "d", checker: Monkey } }`
/// - Testy(_) → error "boom"
/// - Search(req) → `"r0"`, `"r1"`; or, when `req.snippets` contains "fail", `"partial"` then
///   the error "search failed"
/// - Upload(stream) → `Response { message: "got N" }`
/// - EchoStream → each request's message echoed back
///
/// Echo and Search also answer the request's metadata keys that start with `echo-` as
/// response metadata (which travels to frpc clients that took the metadata extension only;
/// Go peers never see it): what `frpc call -v` shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct CaptureService;

/// Sets the request's `echo-*` metadata as the response's.
fn echo_metadata(ctx: &Context) {
    let mut echoed = frpc::Metadata::new();
    let keys = ctx.metadata().iter().filter(|(key, _)| key.starts_with("echo-"));
    for (key, value) in keys {
        // The request's keys and values are valid metadata already: nothing can fail here.
        let _ = match key.ends_with("-bin") {
            true => echoed.insert_bin(key, value.to_vec()),
            false => echoed.insert(key, &String::from_utf8_lossy(value)),
        };
    }
    if !echoed.is_empty() {
        ctx.set_response_metadata(echoed);
    }
}

impl pb::EchoService for CaptureService {
    async fn echo(&self, ctx: &Context, request: Request) -> Result<Response, Status> {
        echo_metadata(ctx);
        Ok(Response {
            message: request.message,
            test: Some(Data {
                message: "d".into(),
                checker: pb::Test::Monkey as i32,
            }),
        })
    }

    async fn echo_stream(
        &self,
        _ctx: &Context,
        mut inbound: Streaming<Request>,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status> {
        while let Some(request) = inbound.message().await? {
            outbound.send(text(request.message)).await?;
        }
        Ok(())
    }

    async fn testy(&self, _ctx: &Context, _request: SearchResponse) -> Result<StockPricesWrapper, Status> {
        Err(Status::new("boom"))
    }

    async fn search(
        &self,
        ctx: &Context,
        request: SearchResponse,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status> {
        echo_metadata(ctx);
        if request.snippets.iter().any(|s| s == "fail") {
            outbound.send(text("partial")).await?;
            return Err(Status::new("search failed"));
        }
        outbound.send(text("r0")).await?;
        outbound.send(text("r1")).await?;
        Ok(())
    }

    async fn upload(&self, _ctx: &Context, mut inbound: Streaming<Data>) -> Result<Response, Status> {
        let mut count = 0;
        while inbound.message().await?.is_some() {
            count += 1;
        }
        Ok(text(format!("got {count}")))
    }
}

fn text(message: impl Into<String>) -> Response {
    Response {
        message: message.into(),
        test: None,
    }
}

/// A server builder with [`CaptureService`], to add more to (raw routes, say).
pub fn builder(framing: Framing, concurrency: Concurrency) -> frpc::Builder {
    frpc::Server::builder()
        .framing(framing)
        .concurrency(concurrency)
        .add_service(pb::EchoServiceServer::new(CaptureService))
}

/// A server running [`CaptureService`] with the given framing and concurrency.
pub fn server(framing: Framing, concurrency: Concurrency) -> frpc::Server {
    builder(framing, concurrency)
        .build()
        .expect("one service cannot conflict with itself")
}

/// Serves [`CaptureService`] on `listener` until an error.
pub async fn serve(
    listener: TcpListener,
    framing: Framing,
    concurrency: Concurrency,
) -> Result<(), frpc::Error> {
    server(framing, concurrency).serve_listener(listener).await
}
