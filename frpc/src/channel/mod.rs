//! [`Channel`]: calls to one server over a connection that comes back after it closes, or to
//! many servers balanced by tower's power-of-two-choices, with client layers (tower
//! middleware) on top. Built from [`Endpoint`]s. Services floor: it runs on [`Client`]s.

mod backoff;
mod balance;
mod endpoint;
mod single;
mod state;

use std::fmt;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Layer, Service, ServiceExt};

pub use self::backoff::Backoff;
pub(crate) use self::balance::FirstAnswer;
pub use self::endpoint::Endpoint;
pub use self::state::ChannelState;
pub use crate::caller::{Reply, Request};
pub use tower::discover::Change;

use self::balance::Balanced;
use crate::caller::Caller;
use crate::client::Client;
use crate::metadata::{Metadata, MetadataSlot};
use crate::status::{CloseReason, Error};
use crate::types::Encoded;

type Layered = BoxCloneSyncService<Request, Reply, Error>;

/// Calls to one server over a connection that reconnects, or to many servers balanced by
/// tower's power-of-two-choices. Cheap to clone; clones share the connections, which close
/// when the last clone (and the last call and stream on them) is gone. Generated clients take
/// one: `GreeterClient::new(channel)`.
///
/// **One server** ([`Endpoint::connect`], [`Endpoint::connect_lazy`]): calls go straight to
/// the current connection (no task hop, no lock beyond reading which connection is current).
/// When it closes, the channel reconnects at once and then, while attempts fail, with the
/// endpoint's [`Backoff`] (100 ms doubling to 5 s by default). Calls made while an attempt is
/// under way (a lazy channel's first call, say) wait for it, within their timeout; calls made
/// between failed attempts **fail at once** with [`Error::Unavailable`] (code `Unavailable`)
/// rather than pile up: retry them with a [`crate::retry::Idempotent`] layer, or in the
/// application. Calls in flight when a connection closes fail with
/// [`Error::ConnectionClosed`] (code `Unavailable` too).
///
/// **Many servers** ([`Channel::balance_list`], [`Channel::balance_channel`]): one
/// reconnecting connection per endpoint; each call goes to the less loaded (fewer calls in
/// flight) of two endpoints picked at random among the connected ones. An endpoint whose
/// connection is down is not picked; it rejoins once it reconnects. Calls fail with
/// [`Error::Unavailable`] when no endpoint is connected or connecting, except that a
/// [`crate::discover::Dns`] channel's calls wait for its first answer (within their timeout).
///
/// **Streams** open on the current connection (one of the connected endpoints, in turn, on a
/// balanced channel) and stay on it. **Layers** ([`Channel::with_layer`]) wrap unary calls.
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// #[frpc::service(package = "demo")]
/// pub trait Greeter {
///     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
/// # struct Hello;
/// # impl Greeter for Hello {
/// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
/// #         Ok(request)
/// #     }
/// # }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let mut endpoints = Vec::new();
///     for _ in 0..3 {
///         let server = frpc::Server::builder()
///             .add_service(GreeterServer::new(Hello))
///             .bind("127.0.0.1:0")
///             .await?;
///         endpoints.push(frpc::Endpoint::from(server.local_addr()));
///         tokio::spawn(server.serve());
///     }
///     // A lazy channel to the first server: it connects on the first call.
///     let one = GreeterClient::new(endpoints[0].connect_lazy());
///     assert_eq!(one.greet(Text { value: "lazy".into() }).await?.value, "lazy");
///
///     // All three, balanced.
///     let channel = frpc::Channel::balance_list(endpoints);
///     channel.connected(3).await;
///     let greeter = GreeterClient::new(channel.with_timeout(std::time::Duration::from_secs(5)));
///     for i in 0..10 {
///         assert_eq!(greeter.greet(Text { value: i.to_string() }).await?.value, i.to_string());
///     }
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Channel {
    inner: Inner,
    layered: Option<Layered>,
    timeout: Option<Duration>,
    metadata: Option<Arc<Metadata>>,
    response: Option<MetadataSlot>,
    /// Told when each stream ends ([`Channel::with_metrics`]).
    #[cfg(feature = "metrics")]
    stream_observer: Option<Arc<dyn crate::calls::stream::StreamObserver>>,
}

#[derive(Debug, Clone)]
enum Inner {
    Single(single::Handle),
    Balanced(Balanced),
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Channel");
        match &self.inner {
            Inner::Single(handle) => out.field("endpoint", &handle.endpoint().address()),
            Inner::Balanced(balanced) => out.field("balanced", balanced),
        };
        out.field("layered", &self.layered.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Channel {
    /// One endpoint's channel: a supervisor that starts from `connected`, or lazily without it.
    /// (Here rather than in `endpoint`, which stays a leaf below `single`.)
    pub(crate) fn supervised(endpoint: Endpoint, connected: Option<Client>) -> Channel {
        let start = match connected {
            Some(client) => single::Start::Connected(client),
            None => single::Start::Lazy,
        };
        Channel::single(single::Handle::spawn(endpoint, start, None))
    }

    fn single(handle: single::Handle) -> Channel {
        let timeout = handle.endpoint().config().timeout;
        Channel::with_inner(Inner::Single(handle), timeout)
    }

    fn with_inner(inner: Inner, timeout: Option<Duration>) -> Channel {
        Channel {
            inner,
            layered: None,
            timeout,
            metadata: None,
            response: None,
            #[cfg(feature = "metrics")]
            stream_observer: None,
        }
    }

    /// The channel, telling `observer` about the end of every stream it opens.
    #[cfg(feature = "metrics")]
    pub(crate) fn with_stream_observer(
        &self,
        observer: Arc<dyn crate::calls::stream::StreamObserver>,
    ) -> Channel {
        Channel {
            stream_observer: Some(observer),
            ..self.clone()
        }
    }

    /// A channel balancing calls over `endpoints`, each connected at once and reconnected
    /// whenever its connection closes. Must be called within a Tokio runtime.
    pub fn balance_list(endpoints: impl IntoIterator<Item = Endpoint>) -> Channel {
        Channel::with_inner(Inner::Balanced(Balanced::list(endpoints)), None)
    }

    /// A channel balancing calls over endpoints added and removed at run time through the
    /// returned sender (`Change::Insert(key, endpoint)`, `Change::Remove(key)`; inserting a key
    /// again replaces its endpoint). A removed endpoint takes no new calls; its connection
    /// closes once the calls in flight on it finish (a call the balancer picked it for just
    /// before runs there too; one not yet started goes to another endpoint). A change is in
    /// force for every call and stream made after its `send` returned. Changes are applied as
    /// they come, whether calls are made or not (a channel used for streams alone too):
    /// `capacity` bounds the changes queued and not yet taken, so `send` waits only for that
    /// moment. Must be called within a Tokio runtime.
    ///
    #[cfg_attr(feature = "macros", doc = "```")]
    #[cfg_attr(not(feature = "macros"), doc = "```ignore")]
    /// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
    /// # pub struct Text { pub value: String }
    /// # #[frpc::service(package = "demo")]
    /// # pub trait Greeter {
    /// #     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// # }
    /// # struct Hello;
    /// # impl Greeter for Hello {
    /// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
    /// #         Ok(request)
    /// #     }
    /// # }
    /// use frpc::channel::Change;
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let server = frpc::Server::builder()
    ///         .add_service(GreeterServer::new(Hello))
    ///         .bind("127.0.0.1:0")
    ///         .await?;
    ///     let addr = server.local_addr();
    ///     tokio::spawn(server.serve());
    ///
    ///     let (channel, changes) = frpc::Channel::balance_channel(16);
    ///     changes.send(Change::Insert("a", frpc::Endpoint::from(addr))).await?;
    ///     let greeter = GreeterClient::new(channel.clone());
    ///     assert_eq!(greeter.greet(Text { value: "hi".into() }).await?.value, "hi");
    ///
    ///     changes.send(Change::Remove("a")).await?;
    ///     Ok(())
    /// }
    /// ```
    pub fn balance_channel<K>(capacity: usize) -> (Channel, mpsc::Sender<Change<K, Endpoint>>)
    where
        K: Hash + Eq + Clone + Send + 'static,
    {
        let (balanced, tx) = Balanced::new(capacity);
        (Channel::with_inner(Inner::Balanced(balanced), None), tx)
    }

    /// For a discovery feeding this balanced channel: calls wait for endpoints (instead of
    /// failing for want of any) until the returned guard is dropped.
    pub(crate) fn first_answer(&self) -> Option<balance::FirstAnswer> {
        match &self.inner {
            Inner::Balanced(balanced) => Some(balanced.first_answer()),
            Inner::Single(_) => None,
        }
    }

    /// A handle to the same channel whose calls time out after `timeout` (the default is the
    /// endpoint's `ClientConfig::timeout`, [`Endpoint::timeout`]; on a balanced channel, that
    /// of the endpoint each call goes to): each call's deadline, waiting for a connection
    /// included, for streams their whole life, as
    /// [`Client::with_timeout`](crate::Client::with_timeout).
    pub fn with_timeout(&self, timeout: Duration) -> Channel {
        Channel {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// The timeout of this handle's calls, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A handle to the same channel whose calls and streams carry `metadata` (added to what
    /// this handle carries; see [`Client::with_metadata`]).
    pub fn with_metadata(&self, metadata: Metadata) -> Channel {
        Channel {
            metadata: Some(Metadata::layered(self.metadata.as_ref(), metadata)),
            ..self.clone()
        }
    }

    /// A handle to the same channel whose calls leave their response metadata in `slot`, as
    /// [`crate::Client::with_response_metadata`]'s do.
    pub fn with_response_metadata(&self, slot: &MetadataSlot) -> Channel {
        Channel {
            response: Some(slot.clone()),
            ..self.clone()
        }
    }

    /// A handle to the same channel whose unary calls go through `layer`, tower style: a
    /// `tower::ServiceBuilder` with a timeout, a concurrency limit, a retry policy
    /// ([`crate::retry::Idempotent`]) or any layer over a `Service<Request, Response = Reply>`.
    /// Layers added later wrap those added before. Streams do not go through layers. A layer's
    /// own error (tower's `Elapsed`) comes back as [`Error::Layer`]; frpc's errors unchanged.
    ///
    #[cfg_attr(feature = "macros", doc = "```")]
    #[cfg_attr(not(feature = "macros"), doc = "```ignore")]
    /// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
    /// # pub struct Text { pub value: String }
    /// # #[frpc::service(package = "demo")]
    /// # pub trait Greeter {
    /// #     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// # }
    /// # struct Hello;
    /// # impl Greeter for Hello {
    /// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
    /// #         Ok(request)
    /// #     }
    /// # }
    /// use std::time::Duration;
    /// use tower::ServiceBuilder;
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let server = frpc::Server::builder()
    ///         .add_service(GreeterServer::new(Hello))
    ///         .bind("127.0.0.1:0")
    ///         .await?;
    ///     let addr = server.local_addr();
    ///     tokio::spawn(server.serve());
    ///
    ///     let channel = frpc::Endpoint::from(addr).connect().await?.with_layer(
    ///         ServiceBuilder::new()
    ///             .concurrency_limit(64)
    ///             .timeout(Duration::from_secs(2))
    ///             .retry(frpc::retry::Idempotent::new([greeter::GREET])),
    ///     );
    ///     let greeter = GreeterClient::new(channel);
    ///     assert_eq!(greeter.greet(Text { value: "hi".into() }).await?.value, "hi");
    ///     Ok(())
    /// }
    /// ```
    pub fn with_layer<L>(&self, layer: L) -> Channel
    where
        L: Layer<Channel>,
        L::Service: Service<Request, Response = Reply> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Error: Into<BoxError>,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        let service = layer
            .layer(self.clone())
            .map_err(|err: <L::Service as Service<Request>>::Error| Error::from_layer(err.into()));
        Channel {
            layered: Some(BoxCloneSyncService::new(service)),
            ..self.clone()
        }
    }

    /// Whether a connection is up (on a balanced channel: to any endpoint).
    pub fn is_connected(&self) -> bool {
        match &self.inner {
            Inner::Single(handle) => handle.is_ready(),
            Inner::Balanced(balanced) => balanced.ready() > 0,
        }
    }

    /// How many endpoints are connected now (0 or 1 for a channel to one server).
    pub fn connected_endpoints(&self) -> usize {
        match &self.inner {
            Inner::Single(handle) => usize::from(handle.is_ready()),
            Inner::Balanced(balanced) => balanced.ready(),
        }
    }

    /// Where the channel stands now (see [`ChannelState`]).
    pub fn state(&self) -> ChannelState {
        match &self.inner {
            Inner::Single(handle) => handle.state(),
            Inner::Balanced(balanced) => balanced.state(),
        }
    }

    /// The channel's state changes, to follow them (`changes.changed().await` returns the
    /// state after the next change).
    pub fn state_changes(&self) -> StateChanges {
        StateChanges(match &self.inner {
            Inner::Single(handle) => Changes::Single(handle.subscribe()),
            Inner::Balanced(balanced) => Changes::Balanced {
                last: balanced.state(),
                health: balanced.health(),
            },
        })
    }

    /// How many times the channel connected again after its first connection (summed over the
    /// current endpoints of a balanced channel).
    pub fn reconnects(&self) -> u64 {
        match &self.inner {
            Inner::Single(handle) => handle.reconnects(),
            Inner::Balanced(balanced) => balanced.reconnects(),
        }
    }

    /// Why the channel's last connection closed (any endpoint's, for a balanced channel), once
    /// one has.
    pub fn last_close_reason(&self) -> Option<CloseReason> {
        match &self.inner {
            Inner::Single(handle) => handle.last_close(),
            Inner::Balanced(balanced) => balanced.last_close(),
        }
    }

    /// Waits until at least `count` endpoints are connected (a lazy channel starts
    /// connecting); for a channel to one server any `count` above 0 means its connection.
    pub async fn connected(&self, count: usize) {
        self.wait_connected(|connected| connected >= count).await
    }

    /// Waits until `done(n)` holds for the number `n` of connected endpoints (0 or 1 for a
    /// channel to one server): for tools and tests that follow a channel's connections
    /// (`channel.wait_connected(|n| n == 2)` after an endpoint went down). Bound it with a
    /// timeout: it waits as long as it takes.
    pub async fn wait_connected(&self, mut done: impl FnMut(usize) -> bool) {
        match &self.inner {
            Inner::Single(handle) => handle.wait(|ready| done(usize::from(ready))).await,
            Inner::Balanced(balanced) => balanced.wait(done).await,
        }
    }

    fn request(&self, op: u16, path: &'static str, body: Bytes) -> Request {
        Request {
            op,
            path,
            body,
            timeout: self.timeout,
            metadata: self.metadata.clone(),
        }
    }

    /// Whether to encode a request in protobuf before it is known which connection takes it:
    /// only when every connected endpoint's server accepted the protobuf extension (polyglot,
    /// which every fRPC server reads, otherwise).
    fn protobuf(&self) -> bool {
        match &self.inner {
            Inner::Single(handle) => handle.ready_client().is_some_and(|c| c.protobuf_accepted()),
            Inner::Balanced(balanced) => balanced.protobuf(),
        }
    }

    /// One unary call through the layers, if any; `encode` writes the request (in protobuf
    /// when given `true`). On the fast path (one endpoint, no layers) a request in parts goes
    /// to the connection as it is; layers and balancing see a [`Request`], in one buffer.
    fn unary(
        &self,
        op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Encoded + Send,
    ) -> impl std::future::Future<Output = Result<Reply, Error>> + Send {
        enum Route {
            Layered(Layered, Request),
            Direct(Client, Encoded),
            // No connection is up: the request is encoded once one is, in its encoding.
            Connecting(single::Handle),
            Balanced(Balanced, Request),
        }
        let mut encode = Some(encode);
        let mut encode_now = |protobuf| encode.take().map(|encode| encode(protobuf)).unwrap_or_default();
        let route = match (&self.layered, &self.inner) {
            (Some(layered), _) => Route::Layered(
                layered.clone(),
                self.request(op, path, encode_now(self.protobuf()).into_bytes()),
            ),
            // The fast path: the current connection (its own encoding), with this handle's
            // options.
            (None, Inner::Single(handle)) => match handle.ready_client() {
                Some(client) => {
                    let body = encode_now(client.protobuf_accepted());
                    Route::Direct(client, body)
                }
                None => Route::Connecting(handle.clone()),
            },
            (None, Inner::Balanced(balanced)) => Route::Balanced(
                balanced.clone(),
                self.request(op, path, encode_now(balanced.protobuf()).into_bytes()),
            ),
        };
        let (timeout, metadata, response) = (self.timeout, self.metadata.clone(), self.response.clone());
        async move {
            let reply = match route {
                Route::Layered(layered, request) => layered.oneshot(request).await,
                Route::Direct(mut client, body) => {
                    client.set_options(timeout, metadata, response);
                    return client.unary(op, body).await;
                }
                Route::Connecting(handle) => {
                    // Waiting for a connection counts towards the call's timeout.
                    let (mut client, timeout) = handle.client_within(timeout).await?;
                    let body = encode.take().map(|encode| encode(client.protobuf_accepted()));
                    client.set_options(timeout, metadata, response);
                    return client.unary(op, body.unwrap_or_default()).await;
                }
                Route::Balanced(balanced, request) => balanced.call(request).await,
            };
            let mut reply = reply?;
            if let Some(slot) = &response {
                slot.set(reply.metadata.take());
            }
            Ok(reply)
        }
    }

    /// One unary call below the layers, with the request's options.
    async fn base_call(inner: Inner, request: Request) -> Result<Reply, Error> {
        match inner {
            Inner::Single(handle) => {
                let (mut client, timeout) = handle.client_within(request.timeout).await?;
                client.set_options(timeout, request.metadata, None);
                client.unary(request.op, request.body.into()).await
            }
            Inner::Balanced(balanced) => balanced.call(request).await,
        }
    }
}

impl Service<Request> for Channel {
    type Response = Reply;
    type Error = Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Reply, Error>> + Send>>;

    /// Always ready: a channel with no connection fails the call itself (see [`Channel`]).
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match &self.layered {
            Some(layered) => Box::pin(layered.clone().oneshot(request)),
            None => Box::pin(Channel::base_call(self.inner.clone(), request)),
        }
    }
}

impl Caller for Channel {
    fn with_timeout(&self, timeout: Duration) -> Channel {
        Channel::with_timeout(self, timeout)
    }

    fn with_metadata(&self, metadata: Metadata) -> Channel {
        Channel::with_metadata(self, metadata)
    }

    fn with_response_metadata(&self, slot: &MetadataSlot) -> Channel {
        Channel::with_response_metadata(self, slot)
    }

    fn call(
        &self,
        op: u16,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl std::future::Future<Output = Result<Reply, Error>> + Send {
        self.unary(op, "", |protobuf| encode(protobuf).into())
    }

    fn call_at(
        &self,
        op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl std::future::Future<Output = Result<Reply, Error>> + Send {
        self.unary(op, path, |protobuf| encode(protobuf).into())
    }

    fn call_at_parts(
        &self,
        op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Encoded + Send,
    ) -> impl std::future::Future<Output = Result<Reply, Error>> + Send {
        self.unary(op, path, encode)
    }

    async fn stream_client(&self) -> Result<Client, Error> {
        let (mut client, timeout) = match &self.inner {
            Inner::Single(handle) => handle.client_within(self.timeout).await?,
            Inner::Balanced(balanced) => {
                // Waiting for an endpoint counts towards the call's timeout, as for unary calls.
                let started = tokio::time::Instant::now();
                let client = match self.timeout {
                    None => balanced.stream_client().await?,
                    Some(limit) => tokio::time::timeout(limit, balanced.stream_client())
                        .await
                        .map_err(|_| Error::Timeout(limit))??,
                };
                // No timeout on this handle: the endpoint's own (`Endpoint::timeout`).
                let left = self
                    .timeout
                    .map(|limit| single::left_of(limit, started))
                    .transpose()?;
                let timeout = left.or(client.timeout());
                (client, timeout)
            }
        };
        client.set_options(timeout, self.metadata.clone(), self.response.clone());
        #[cfg(feature = "metrics")]
        client.set_stream_observer(self.stream_observer.clone());
        Ok(client)
    }
}

/// A [`Channel`]'s state changes ([`Channel::state_changes`]).
#[derive(Debug)]
pub struct StateChanges(Changes);

#[derive(Debug)]
enum Changes {
    Single(tokio::sync::watch::Receiver<single::State>),
    /// The endpoints' counts, whose signal wakes only those waiting when they change: the
    /// state last returned tells a change made between two looks.
    Balanced {
        health: Arc<single::Health>,
        last: ChannelState,
    },
}

impl StateChanges {
    /// Waits for the next change and returns the state after it ([`ChannelState::Shutdown`]
    /// once the channel has stopped). Changes closer together than the caller looks may be
    /// seen as one: it is the latest state that is returned.
    pub async fn changed(&mut self) -> ChannelState {
        match &mut self.0 {
            Changes::Single(rx) => match rx.changed().await {
                Ok(()) => rx.borrow_and_update().public(),
                Err(_) => ChannelState::Shutdown,
            },
            Changes::Balanced { health, last } => loop {
                let changed = health.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                let now = health.public();
                if now != *last {
                    *last = now.clone();
                    return now;
                }
                changed.await;
            },
        }
    }
}
