//! Service discovery for balanced channels: [`Dns`] resolves a name periodically (a Kubernetes
//! headless service resolves to one address per ready pod) and sends the addresses that
//! appeared and vanished as `Change::Insert` / `Change::Remove` to a
//! [`crate::Channel::balance_channel`].

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::channel::{Backoff, Change, Channel, Endpoint};

type Resolve = Arc<
    dyn Fn(String, u16) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>> + Send + Sync,
>;

/// A balanced [`Channel`] over every address a DNS name resolves to, re-resolved every
/// `interval`: shorthand for `Dns::new(name, port).interval(interval).channel()`. Must be
/// called within a Tokio runtime.
pub fn dns(name: impl Into<String>, port: u16, interval: Duration) -> Channel {
    Dns::new(name, port).interval(interval).channel()
}

/// DNS discovery: resolves `name` (with `tokio::net::lookup_host`, or the resolver given to
/// [`Dns::resolver`]) at once and then every `interval` (default 30 s), and sends what changed
/// to a balanced channel, keyed by address. A failed resolution changes nothing (the last
/// known addresses stay) and is retried sooner than `interval`: after 250 ms, doubling, at
/// most `interval` (with 20 % jitter), so that a name not yet
/// registered (a pod starting) or a resolver's passing failure does not leave calls failing
/// for a whole interval. An empty answer removes them all.
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
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(GreeterServer::new(Hello))
///         .bind("127.0.0.1:0")
///         .await?;
///     let port = server.local_addr().port();
///     tokio::spawn(server.serve());
///
///     // In Kubernetes: a headless service's name, "greeter.default.svc.cluster.local".
///     let channel = frpc::discover::Dns::new("127.0.0.1", port)
///         .interval(std::time::Duration::from_secs(10))
///         .channel();
///     let greeter = GreeterClient::new(channel);
///     assert_eq!(greeter.greet(Text { value: "hi".into() }).await?.value, "hi");
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Dns {
    name: String,
    port: u16,
    interval: Duration,
    template: Endpoint,
    resolve: Resolve,
}

/// The first wait before a failed resolution is tried again: long enough not to hammer a
/// failing resolver, short enough that a name registered a moment later is found at once.
const RETRY_FIRST: Duration = Duration::from_millis(250);

impl fmt::Debug for Dns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dns")
            .field("name", &self.name)
            .field("port", &self.port)
            .field("interval", &self.interval)
            .field("template", &self.template)
            .finish()
    }
}

impl Dns {
    /// Discovery of the addresses of `name`, each at `port`.
    pub fn new(name: impl Into<String>, port: u16) -> Dns {
        Dns {
            name: name.into(),
            port,
            interval: Duration::from_secs(30),
            template: Endpoint::new(""),
            resolve: Arc::new(|name, port| {
                Box::pin(async move { Ok(tokio::net::lookup_host((name.as_str(), port)).await?.collect()) })
            }),
        }
    }

    /// How often to resolve again (default 30 s). A failed resolution is retried sooner: after
    /// 250 ms, doubling, at most `interval`.
    pub fn interval(mut self, interval: Duration) -> Dns {
        self.interval = interval;
        self
    }

    /// The endpoint settings (client configuration, TLS, backoff) of every discovered address;
    /// its own address is ignored.
    pub fn endpoint(mut self, template: Endpoint) -> Dns {
        self.template = template;
        self
    }

    /// Resolves with `resolve(name, port)` instead of the system resolver (another DNS client,
    /// a service registry, a test).
    pub fn resolver<F, Fut>(mut self, resolve: F) -> Dns
    where
        F: Fn(String, u16) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static,
    {
        self.resolve = Arc::new(move |name, port| Box::pin(resolve(name, port)));
        self
    }

    /// A balanced channel over the discovered addresses; discovery stops when the channel's
    /// last clone is dropped. Must be called within a Tokio runtime.
    pub fn channel(self) -> Channel {
        let (channel, changes) = Channel::balance_channel(64);
        // Calls made before the first answer wait for it rather than fail for want of
        // endpoints.
        let first = channel.first_answer();
        tokio::spawn(self.run(changes, first));
        channel
    }

    /// Sends the discovered changes to `changes` (a [`Channel::balance_channel`]'s sender)
    /// until it closes. Must be called within a Tokio runtime.
    pub fn spawn(self, changes: mpsc::Sender<Change<SocketAddr, Endpoint>>) -> JoinHandle<()> {
        tokio::spawn(self.run(changes, None))
    }

    async fn run(
        self,
        changes: mpsc::Sender<Change<SocketAddr, Endpoint>>,
        mut first: Option<crate::channel::FirstAnswer>,
    ) {
        let mut known: HashSet<SocketAddr> = HashSet::new();
        // Where a failed resolution is noted for calls that find no endpoint (a channel of
        // its own only).
        let health = first.as_ref().map(|first| first.health());
        // A success returns to the interval; the backoff's own floor (10 ms) still applies.
        let retry = Backoff::default().initial(RETRY_FIRST).max(self.interval);
        // Failed resolutions in a row: they pick the wait before the next (0: the interval).
        let mut failures: u32 = 0;
        loop {
            match (self.resolve)(self.name.clone(), self.port).await {
                Ok(addrs) => {
                    failures = 0;
                    if self.send_changes(&changes, &mut known, addrs).await.is_err() {
                        return;
                    }
                }
                Err(err) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(name = %self.name, %err, failures, "DNS discovery failed, keeping the last addresses");
                    if let Some(health) = &health {
                        health.record_failure(format!("resolving {}: {err}", self.name));
                    }
                }
            }
            // The first answer (addresses, or a failure) is in: calls stop waiting for it.
            drop(first.take());
            let wait = match failures {
                0 => self.interval,
                n => retry.delay(n - 1),
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = changes.closed() => return,
            }
        }
    }

    /// Sends what differs between `known` and the resolved `addrs`, which become `known`; an
    /// error when the channel is gone.
    async fn send_changes(
        &self,
        changes: &mpsc::Sender<Change<SocketAddr, Endpoint>>,
        known: &mut HashSet<SocketAddr>,
        addrs: Vec<SocketAddr>,
    ) -> Result<(), mpsc::error::SendError<Change<SocketAddr, Endpoint>>> {
        let now: HashSet<SocketAddr> = addrs.into_iter().collect();
        for gone in known.difference(&now) {
            changes.send(Change::Remove(*gone)).await?;
        }
        for new in now.difference(known) {
            let endpoint = self.template.with_address(new.to_string());
            changes.send(Change::Insert(*new, endpoint)).await?;
        }
        *known = now;
        Ok(())
    }
}
