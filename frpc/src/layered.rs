//! One service with its own layers and interceptors ([`LayeredService`]), what
//! `FooServer::new(svc).with_interceptor(..)` and `.layer(..)` make: they wrap that service's
//! calls only, inside the server-wide ones. Services floor.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use crate::calls::stream::ServerStream;
use crate::context::Context;
use crate::middleware::{self, CallLayer, CallRequest, LayerFn, Stack};
use crate::service::{MethodDesc, Service};
use crate::status::Status;
use crate::types::BoxFuture;

/// A service whose calls go through its own [`tower::Layer`]s and interceptors before its
/// handlers, like tonic's `FooServer::with_interceptor`: an auth check on one service leaves
/// the others (and health checks) alone. Made by a generated server's `with_interceptor` or
/// `layer` (`FooServer::new(svc).with_interceptor(check)`), or by [`LayeredService::new`]
/// around any service (the health service included); added with
/// [`Builder::add_service`](crate::Builder::add_service) like the service itself.
///
/// - **Order**: the layer added first is the outermost, as with
///   [`Builder::layer`](crate::Builder::layer); a service's layers run inside the server-wide
///   ones (after them on the way in).
/// - **One stack per service**, built at its first call and shared by every connection: a
///   concurrency limit here limits this service across the server.
/// - Streams go through the layers when they open, as with server-wide layers.
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// #[frpc::service(package = "demo")]
/// pub trait Vault {
///     async fn open(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
/// #[frpc::service(package = "demo", first_op = 20)]
/// pub trait Lobby {
///     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
/// # struct Svc;
/// # impl Vault for Svc {
/// #     async fn open(&self, _: &frpc::Context, r: Text) -> Result<Text, frpc::Status> { Ok(r) }
/// # }
/// # impl Lobby for Svc {
/// #     async fn greet(&self, _: &frpc::Context, r: Text) -> Result<Text, frpc::Status> { Ok(r) }
/// # }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         // Only the vault wants a token; the lobby stays open.
///         .add_service(VaultServer::new(Svc).with_interceptor(|call: &frpc::CallRequest| {
///             match call.metadata().get("authorization") {
///                 Some("Bearer secret") => Ok(()),
///                 _ => Err(frpc::Status::unauthenticated("no valid token")),
///             }
///         }))
///         .add_service(LobbyServer::new(Svc))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///
///     let client = frpc::Client::connect(addr).await?;
///     let hi = Text { value: "hi".into() };
///     assert_eq!(LobbyClient::new(client.clone()).greet(hi.clone()).await?, hi);
///     let refused = VaultClient::new(client.clone()).open(hi.clone()).await.unwrap_err();
///     assert_eq!(refused.code(), frpc::Code::Unauthenticated);
///
///     let mut token = frpc::Metadata::new();
///     token.insert("authorization", "Bearer secret")?;
///     let vault = VaultClient::new(client).with_metadata(token);
///     assert_eq!(vault.open(hi.clone()).await?, hi);
///     Ok(())
/// }
/// ```
pub struct LayeredService {
    inner: Arc<dyn Service>,
    /// The layers, the first the outermost, until the stack is built from them.
    layers: Mutex<Vec<LayerFn>>,
    stack: OnceLock<Stack>,
}

impl fmt::Debug for LayeredService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LayeredService")
            .field("service", &self.inner.name())
            .field("built", &self.stack.get().is_some())
            .finish_non_exhaustive()
    }
}

impl LayeredService {
    /// `service` with no layers yet (a generated `FooServer`, or
    /// [`HealthServer`](crate::health::HealthServer)).
    pub fn new(service: impl Service) -> LayeredService {
        LayeredService {
            inner: Arc::new(service),
            layers: Mutex::new(Vec::new()),
            stack: OnceLock::new(),
        }
    }

    /// Wraps this service's calls in `layer`, inside the layers added before
    /// (see [`Builder::layer`](crate::Builder::layer) for what a layer sees).
    pub fn layer<L: CallLayer>(self, layer: L) -> LayeredService {
        self.push(Box::new(move |inner| layer.wrap(inner)))
    }

    /// Checks this service's calls with `check` (`Err(status)` answers the call with it), inside
    /// the layers added before; as [`Builder::interceptor`](crate::Builder::interceptor), for
    /// this service only.
    pub fn with_interceptor<F>(self, check: F) -> LayeredService
    where
        F: FnMut(&CallRequest) -> Result<(), Status> + Send + Sync + 'static,
    {
        self.push(Box::new(move |inner| {
            middleware::erase(middleware::Interceptor::new(inner, check))
        }))
    }

    fn push(self, layer: LayerFn) -> LayeredService {
        self.layers.lock().unwrap_or_else(|e| e.into_inner()).push(layer);
        self
    }

    /// The stack, built at the first call.
    fn stack(&self) -> &Stack {
        self.stack.get_or_init(|| {
            let layers = std::mem::take(&mut *self.layers.lock().unwrap_or_else(|e| e.into_inner()));
            middleware::build_stack(layers)
        })
    }

    /// The method of operation `op`.
    fn method(&self, op: u16) -> Result<&'static MethodDesc, Status> {
        let methods = self.inner.methods();
        let method = methods.iter().find(|method| method.op == op);
        method.ok_or_else(|| Status::unimplemented(format!("unknown operation {op}")))
    }
}

impl Service for LayeredService {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn methods(&self) -> &'static [MethodDesc] {
        self.inner.methods()
    }

    fn call_unary(&self, op: u16, ctx: Context, request: Bytes) -> BoxFuture<Result<Bytes, Status>> {
        let request = self.method(op).map(|method| {
            CallRequest::new(
                self.inner.clone(),
                method.name,
                op,
                method.kind,
                ctx,
                request,
                None,
            )
        });
        let stack = self.stack().clone();
        Box::pin(async move { middleware::unary_through(&stack, request?).await })
    }

    fn call_streaming(&self, op: u16, ctx: Context, stream: ServerStream) -> BoxFuture<Result<(), Status>> {
        let (inner, method, stack) = (self.inner.clone(), self.method(op), self.stack().clone());
        let request = move |slot| {
            let method = method?;
            Ok(CallRequest::new(
                inner,
                method.name,
                op,
                method.kind,
                ctx,
                Bytes::new(),
                Some(slot),
            ))
        };
        Box::pin(async move { middleware::streaming_through(&stack, stream, request).await })
    }

    fn protobuf(&self) -> bool {
        self.inner.protobuf()
    }

    fn file_descriptor_set(&self) -> &'static [u8] {
        self.inner.file_descriptor_set()
    }
}
