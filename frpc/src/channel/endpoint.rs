//! [`Endpoint`]: where and how a [`Channel`] connects (address, client configuration, TLS,
//! reconnect backoff), tonic style.

use std::fmt;
use std::time::Duration;

use frpc_wire::Framing;

use super::Channel;
use super::backoff::Backoff;
use crate::client::Client;
use crate::config::ClientConfig;
use crate::status::Error;

/// One server a [`Channel`] connects to: its address (`host:port`, resolved again at each
/// connection attempt), the [`ClientConfig`] of each connection, TLS, and the reconnect
/// [`Backoff`].
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
///     use std::time::Duration;
///     let server = frpc::Server::builder()
///         .add_service(GreeterServer::new(Hello))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///
///     let channel = frpc::Endpoint::new(addr.to_string())
///         .connect_timeout(Duration::from_secs(1))
///         .timeout(Duration::from_secs(5))
///         .connect()
///         .await?;
///     let greeter = GreeterClient::new(channel);
///     assert_eq!(greeter.greet(Text { value: "hi".into() }).await?.value, "hi");
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Endpoint {
    address: String,
    /// The effective configuration: the base ([`Endpoint::client_config`]) with the
    /// endpoint's own settings over it.
    config: ClientConfig,
    /// The endpoint's own settings (timeouts, framing), kept to apply over a later base.
    overrides: Overrides,
    backoff: Backoff,
    health_check: bool,
    #[cfg(feature = "tls")]
    tls: Option<(String, std::sync::Arc<crate::tls::rustls::ClientConfig>)>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Endpoint");
        out.field("address", &self.address)
            .field("config", &self.config)
            .field("backoff", &self.backoff)
            .field("health_check", &self.health_check);
        #[cfg(feature = "tls")]
        out.field("tls", &self.tls.as_ref().map(|(name, _)| name));
        out.finish()
    }
}

/// The settings an [`Endpoint`] sets itself, applied over any base configuration.
#[derive(Debug, Clone, Default)]
struct Overrides {
    connect_timeout: Option<Duration>,
    timeout: Option<Duration>,
    framing: Option<Framing>,
}

impl Overrides {
    fn apply(&self, config: &mut ClientConfig) {
        if let Some(timeout) = self.connect_timeout {
            config.connect_timeout = timeout;
        }
        if let Some(timeout) = self.timeout {
            config.timeout = Some(timeout);
        }
        if let Some(framing) = self.framing {
            config.connection.framing = framing;
        }
    }
}

impl Endpoint {
    /// An endpoint for `address` (`host:port`; a name is resolved at each connection attempt)
    /// with the default [`ClientConfig`] and [`Backoff`].
    pub fn new(address: impl Into<String>) -> Endpoint {
        Endpoint {
            address: address.into(),
            config: ClientConfig::default(),
            overrides: Overrides::default(),
            backoff: Backoff::default(),
            health_check: true,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// An endpoint for a static address (`Endpoint::from_static("10.0.0.7:8080")`).
    pub fn from_static(address: &'static str) -> Endpoint {
        Endpoint::new(address)
    }

    /// An endpoint for an address known at run time, checked first, as tonic's
    /// `Endpoint::from_shared`: `host:port`, without a scheme (`http://` is gRPC's; frpc
    /// endpoints are TCP addresses). A bad one is [`Error::Config`] naming it.
    pub fn from_shared(address: impl Into<String>) -> Result<Endpoint, Error> {
        let address = address.into();
        check_address(&address)?;
        Ok(Endpoint::new(address))
    }

    /// The address connected to.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The configuration of each connection.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Sets the base configuration of each connection. The endpoint's own settings
    /// ([`connect_timeout`](Self::connect_timeout), [`timeout`](Self::timeout),
    /// [`framing`](Self::framing)) apply over it whether they come before or after.
    pub fn client_config(mut self, config: ClientConfig) -> Endpoint {
        self.config = config;
        self.overrides.apply(&mut self.config);
        self
    }

    /// How long one connection attempt may take (`ClientConfig::connect_timeout`).
    pub fn connect_timeout(mut self, timeout: Duration) -> Endpoint {
        self.overrides.connect_timeout = Some(timeout);
        self.overrides.apply(&mut self.config);
        self
    }

    /// The default timeout of each call (`ClientConfig::timeout`).
    pub fn timeout(mut self, timeout: Duration) -> Endpoint {
        self.overrides.timeout = Some(timeout);
        self.overrides.apply(&mut self.config);
        self
    }

    /// The framing spoken (`ConnectionConfig::framing`).
    pub fn framing(mut self, framing: Framing) -> Endpoint {
        self.overrides.framing = Some(framing);
        self.overrides.apply(&mut self.config);
        self
    }

    /// The backoff between failed connection attempts (see [`Backoff`] for the default).
    pub fn backoff(mut self, backoff: Backoff) -> Endpoint {
        self.backoff = backoff;
        self
    }

    /// The reconnect backoff.
    pub fn reconnect_backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// Whether a balanced channel follows this endpoint's health (default `true`): on each
    /// connection to an frpc server that took the extensions, it watches the whole server's
    /// [`frpc::health`](crate::health) status (`Watch("")`) and sends no new calls or streams
    /// there while it reports `NOT_SERVING` (as after
    /// [`HealthReporter::set_all_not_serving`](crate::health::HealthReporter::set_all_not_serving)),
    /// nor once the watch ends (the server is shutting down). A new connection takes nothing
    /// until the watch's first answer says `SERVING` (the endpoint counts as connecting
    /// meanwhile, as in gRPC); a server whose first watch fails, or that gives no first answer
    /// within [`connect_timeout`](Self::connect_timeout), is used as if unwatched until a
    /// later answer says otherwise. The watch is a stream without a timeout: the endpoint's
    /// [`timeout`](Self::timeout) bounds calls, not it. A server without the health service
    /// (the open is UNIMPLEMENTED), a Go fRPC server, or a channel to one endpoint is not
    /// watched. `false`: the endpoint is used whenever it is connected.
    pub fn health_check(mut self, on: bool) -> Endpoint {
        self.health_check = on;
        self
    }

    /// Whether [`Endpoint::health_check`] is on.
    pub fn is_health_checked(&self) -> bool {
        self.health_check
    }

    /// Connects over TLS, checking the server's certificate for `server_name`.
    #[cfg(feature = "tls")]
    pub fn tls(
        mut self,
        server_name: impl Into<String>,
        config: std::sync::Arc<crate::tls::rustls::ClientConfig>,
    ) -> Endpoint {
        self.tls = Some((server_name.into(), config));
        self
    }

    /// The same endpoint at another address (DNS discovery makes one per resolved address).
    pub(crate) fn with_address(&self, address: String) -> Endpoint {
        Endpoint {
            address,
            ..self.clone()
        }
    }

    /// Connects now and returns a [`Channel`] that reconnects whenever the connection closes.
    /// The attempt succeeds only once the connection has shown it works (the server answered
    /// the extension offer, or a plain peer such as Go fRPC answered a PING), all within one
    /// `connect_timeout`: a server that closes at accept fails it with the close reason, a
    /// black hole with [`Error::Connect`] (`TimedOut`). A failed first attempt is its error
    /// ([`Error::Connect`], [`Error::Config`]…). Must be called within a Tokio runtime.
    ///
    /// Later connections that close before they served a call, within the longest backoff (5 s
    /// by default), count as failed attempts: the channel backs off (with jitter) before the
    /// next, and fails calls at once with [`Error::Unavailable`] meanwhile.
    pub async fn connect(&self) -> Result<Channel, Error> {
        let client = self.connect_client().await?;
        Ok(Channel::supervised(self.clone(), Some(client)))
    }

    /// A [`Channel`] that connects on its first call (which waits for that attempt) and
    /// reconnects whenever the connection closes. Must be called within a Tokio runtime.
    pub fn connect_lazy(&self) -> Channel {
        Channel::supervised(self.clone(), None)
    }

    /// One connection attempt, within one `connect_timeout` in all: it succeeds only once the
    /// connection has shown it works (see [`Endpoint::connect`]).
    pub(crate) async fn connect_client(&self) -> Result<Client, Error> {
        check_address(&self.address)?;
        let started = tokio::time::Instant::now();
        #[cfg(feature = "tls")]
        if let Some((name, tls)) = &self.tls {
            let config = self.config.clone();
            let client = Client::connect_tls(self.address.as_str(), name, tls.clone(), config).await?;
            return self.settle(client, started).await;
        }
        let client = Client::connect_with(self.address.as_str(), self.config.clone()).await?;
        self.settle(client, started).await
    }

    /// Waits, within what is left of the connect timeout, for the server to show the
    /// connection works (its answer to the extension offer, or a PONG from a plain peer), so
    /// that a server closing at accept or a black hole fails the attempt, and the channel knows
    /// how to encode requests (protobuf or polyglot) for it.
    async fn settle(&self, client: Client, started: tokio::time::Instant) -> Result<Client, Error> {
        let left = self.config.connect_timeout.saturating_sub(started.elapsed());
        client.answered_within(left).await?;
        Ok(client)
    }
}

impl From<&'static str> for Endpoint {
    fn from(address: &'static str) -> Endpoint {
        Endpoint::new(address)
    }
}

impl From<String> for Endpoint {
    fn from(address: String) -> Endpoint {
        Endpoint::new(address)
    }
}

impl From<std::net::SocketAddr> for Endpoint {
    fn from(address: std::net::SocketAddr) -> Endpoint {
        Endpoint::new(address.to_string())
    }
}

/// `address` is `host:port` (a name, an IPv4 address or a bracketed IPv6 one, then a port):
/// an error naming it otherwise, with what is wrong.
fn check_address(address: &str) -> Result<(), Error> {
    let bad = |why: &str| Err(Error::Config(format!("endpoint address `{address}`: {why}")));
    if address.contains("://") {
        return bad("frpc endpoints are `host:port`, without a scheme (`http://` is gRPC's)");
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(()),
        _ => bad("expected `host:port`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_as_tonic_users_expect() {
        for good in ["127.0.0.1:80", "localhost:8080", "[::1]:9000", "svc.internal:443"] {
            assert_eq!(Endpoint::from_shared(good).unwrap().address(), good);
        }
        for (bad, why) in [
            ("http://127.0.0.1:80", "without a scheme"),
            ("127.0.0.1", "expected `host:port`"),
            (":80", "expected `host:port`"),
            ("host:http", "expected `host:port`"),
        ] {
            let err = Endpoint::from_shared(bad).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, Error::Config(_)), "{bad}: {text}");
            assert!(
                text.contains(&format!("`{bad}`")) && text.contains(why),
                "{bad}: {text}"
            );
        }
    }

    #[tokio::test]
    async fn connecting_to_a_scheme_fails_naming_it() {
        let err = Endpoint::new("http://127.0.0.1:1").connect().await.unwrap_err();
        assert!(err.to_string().contains("without a scheme"), "{err}");
    }
}
