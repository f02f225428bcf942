//! The same streaming service as a plain tonic server (tonic's own transport, no frpc): the
//! behaviours of [`super::Svc`] by request (`fail`, `meta`, `hang`), for the tests of frpc's
//! gRPC client against a server frpc had no hand in.

use std::net::SocketAddr;
use std::pin::Pin;

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::{Events, tpb};

type Replies = Pin<Box<dyn Stream<Item = Result<tpb::Item, Status>> + Send>>;

/// The tonic implementation; reports like [`super::Svc`]: `<method> hang <has grpc-timeout>`,
/// then `<method> cancelled` once the client went.
pub struct TonicStreams {
    pub events: Events,
}

/// Starts a plain tonic server of the service; its handlers' reports.
pub async fn start() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = tpb::streams_server::StreamsServer::new(TonicStreams { events: tx });
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tonic::transport::Server::builder().add_service(service);
    tokio::spawn(server.serve_with_incoming(incoming));
    (addr, rx)
}

/// Reports `<what> cancelled` when dropped (a client-streaming handler the client reset).
struct OnDrop(Events, &'static str);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(format!("{} cancelled", self.1));
    }
}

/// The `x-user` the client sent back as `x-echo-user`, on `response`.
fn echo_user<T>(user: Option<String>, response: &mut Response<T>) {
    if let Some(user) = user {
        response
            .metadata_mut()
            .insert("x-echo-user", user.parse().unwrap());
    }
}

fn user<T>(request: &Request<T>) -> Option<String> {
    let user = request.metadata().get("x-user")?;
    Some(user.to_str().unwrap().to_string())
}

fn has_timeout<T>(request: &Request<T>) -> bool {
    request.metadata().contains_key("grpc-timeout")
}

/// `OK` trailers carrying `x-done: yes` (tonic sends a stream's `OK` status item as its
/// trailers).
fn done_trailers() -> Status {
    let mut metadata = tonic::metadata::MetadataMap::new();
    metadata.insert("x-done", "yes".parse().unwrap());
    Status::with_metadata(tonic::Code::Ok, "", metadata)
}

#[tonic::async_trait]
impl tpb::streams_server::Streams for TonicStreams {
    type CountStream = Replies;
    type ChatStream = Replies;

    async fn count(&self, request: Request<tpb::CountRequest>) -> Result<Response<Replies>, Status> {
        let (user, deadline) = (user(&request), has_timeout(&request));
        let request = request.into_inner();
        let meta = request.mode == "meta";
        let (tx, rx) = mpsc::channel(16);
        let events = self.events.clone();
        tokio::spawn(async move {
            for n in 0..request.n {
                let item = tpb::Item {
                    text: format!("item {n}"),
                    n,
                    ..Default::default()
                };
                if tx.send(Ok(item)).await.is_err() {
                    return;
                }
            }
            let end = match request.mode.as_str() {
                "fail" => Err(Status::aborted(format!("failed after {}", request.n))),
                "meta" => Err(done_trailers()),
                "hang" => {
                    events.send(format!("count hang {deadline}")).unwrap();
                    tx.closed().await;
                    events.send("count cancelled".into()).unwrap();
                    return;
                }
                _ => return,
            };
            let _ = tx.send(end).await;
        });
        let mut response = Response::new(Box::pin(ReceiverStream::new(rx)) as Replies);
        if meta {
            echo_user(user, &mut response);
        }
        Ok(response)
    }

    async fn sum(&self, request: Request<Streaming<tpb::Item>>) -> Result<Response<tpb::Total>, Status> {
        let (user, deadline) = (user(&request), has_timeout(&request));
        let mut items = request.into_inner();
        let mut total = tpb::Total::default();
        while let Some(item) = items.message().await? {
            match item.text.as_str() {
                "fail" => return Err(Status::invalid_argument("bad item")),
                "hang" => {
                    let _cancelled = OnDrop(self.events.clone(), "sum");
                    self.events.send(format!("sum hang {deadline}")).unwrap();
                    std::future::pending::<()>().await;
                }
                _ => {}
            }
            total.sum += item.n;
            total.count += 1;
        }
        let mut response = Response::new(total);
        echo_user(user, &mut response);
        Ok(response)
    }

    async fn chat(&self, request: Request<Streaming<tpb::Item>>) -> Result<Response<Replies>, Status> {
        let (user, deadline) = (user(&request), has_timeout(&request));
        let mut items = request.into_inner();
        let (tx, rx) = mpsc::channel(16);
        let events = self.events.clone();
        tokio::spawn(async move {
            loop {
                let item = match items.message().await {
                    Ok(Some(item)) => item,
                    Ok(None) => return,
                    Err(status) => {
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                };
                let reply = match item.text.as_str() {
                    "fail" => Err(Status::failed_precondition("chat failed")),
                    "hang" => {
                        events.send(format!("chat hang {deadline}")).unwrap();
                        tx.closed().await;
                        events.send("chat cancelled".into()).unwrap();
                        return;
                    }
                    text => Ok(tpb::Item {
                        text: format!("echo:{text}"),
                        n: item.n,
                        data: item.data,
                    }),
                };
                let failed = reply.is_err();
                if tx.send(reply).await.is_err() || failed {
                    return;
                }
            }
        });
        let mut response = Response::new(Box::pin(ReceiverStream::new(rx)) as Replies);
        echo_user(user, &mut response);
        Ok(response)
    }
}
