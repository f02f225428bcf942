//! The multiplexed client: one connection, any number of concurrent calls from any number of
//! generated service clients.
//!
//! Unary calls follow Go fRPC: a per-method u16 request id (first id 1, wrapping), the reply
//! matched by (operation, id). An id still in flight is never reused. The in-flight table is the
//! one lock a call takes (once to register, once when the reply lands).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc_wire::Packet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, oneshot};

use crate::config::ClientConfig;
use crate::connection::{Connection, Dispatch, Tasks};
use crate::hash::IdMap;
use crate::raw::{PacketSender, RawPackets, check_op};
use crate::status::Error;

type Reply = Result<Bytes, Error>;

/// A connection to an frpc (or Go fRPC) server. Cheap to clone; clones share the connection,
/// which closes when the last clone is dropped.
#[derive(Clone)]
pub struct Client {
    handle: Arc<Handle>,
    timeout: Option<Duration>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("peer", &self.handle.conn.peer())
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Owned by the `Client` clones only: dropping the last one closes the connection.
#[derive(Debug)]
struct Handle {
    conn: Arc<Connection>,
    inflight: Arc<Inflight>,
    raw: Arc<RawRoutes>,
    tasks: Mutex<Option<Tasks<OwnedReadHalf, OwnedWriteHalf>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.conn.close("client dropped");
    }
}

impl Client {
    /// Connects with the default [`ClientConfig`].
    pub async fn connect(addr: impl ToSocketAddrs) -> Result<Client, Error> {
        Client::connect_with(addr, ClientConfig::default()).await
    }

    /// Connects with `config`.
    pub async fn connect_with(addr: impl ToSocketAddrs, config: ClientConfig) -> Result<Client, Error> {
        let stream = TcpStream::connect(addr).await?;
        Client::from_stream(stream, config)
    }

    /// Connects over TLS, checking the server's certificate for `server_name`.
    #[cfg(feature = "tls")]
    pub async fn connect_tls(
        addr: impl ToSocketAddrs,
        server_name: &str,
        tls: Arc<crate::tls::rustls::ClientConfig>,
        config: ClientConfig,
    ) -> Result<Client, Error> {
        use crate::tls::rustls::pki_types::ServerName;
        let name = ServerName::try_from(server_name.to_owned())
            .map_err(|err| Error::Config(format!("invalid TLS server name {server_name:?}: {err}")))?;
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(config.connection.nodelay)?;
        let peer = stream.peer_addr()?;
        let handshake = crate::tls::TlsConnector::from(tls).connect(name, stream);
        let tls = match tokio::time::timeout(config.connection.idle_timeout, handshake).await {
            Ok(result) => result?,
            Err(_) => return Err(Error::Timeout(config.connection.idle_timeout)),
        };
        let (read, write) = tokio::io::split(tls);
        // Takeover is not offered over TLS, so the task handles are not kept.
        Ok(Client::start(read, write, peer, config).0)
    }

    /// Runs the client over an already connected TCP stream.
    pub fn from_stream(stream: TcpStream, config: ClientConfig) -> Result<Client, Error> {
        stream.set_nodelay(config.connection.nodelay)?;
        let peer = stream.peer_addr()?;
        let (read, write) = stream.into_split();
        let (client, tasks) = Client::start(read, write, peer, config);
        *client.handle.tasks.lock().unwrap_or_else(|e| e.into_inner()) = Some(tasks);
        Ok(client)
    }

    fn start<R, W>(read: R, write: W, peer: SocketAddr, config: ClientConfig) -> (Client, Tasks<R, W>)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let inflight = Arc::new(Inflight::default());
        let raw = Arc::new(RawRoutes::default());
        let dispatch = ClientDispatch {
            inflight: inflight.clone(),
            raw: raw.clone(),
        };
        let (conn, tasks) = Connection::spawn(
            (read, write),
            peer,
            &config.connection,
            dispatch,
            None,
            Default::default(),
        );
        let client = Client {
            handle: Arc::new(Handle {
                conn,
                inflight,
                raw,
                tasks: Mutex::new(None),
            }),
            timeout: config.timeout,
        };
        (client, tasks)
    }

    /// A handle to the same connection whose calls time out after `timeout`.
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            handle: self.handle.clone(),
            timeout: Some(timeout),
        }
    }

    /// The timeout applied to this handle's calls, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The server's address.
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.handle.conn.peer()
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.handle.conn.is_closed()
    }

    /// Resolves when the connection closes.
    pub async fn closed(&self) {
        self.handle.conn.closed().await
    }

    /// Closes the connection; pending calls fail with [`Error::ConnectionClosed`].
    pub fn close(&self) {
        self.handle.conn.close("closed by the client");
    }

    /// Number of unary calls waiting for a reply.
    pub fn inflight(&self) -> usize {
        self.handle.inflight.lock().calls.len()
    }

    /// Number of open streams on the connection.
    pub fn open_streams(&self) -> usize {
        self.handle.conn.streams.len()
    }

    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.handle.conn
    }

    /// Sends a raw packet with operation `op` (10 or more, one no RPC uses) and id `id`.
    pub async fn send_packet(&self, op: u16, id: u16, content: impl Into<Bytes>) -> Result<(), Error> {
        self.packet_sender().send(op, id, content).await
    }

    /// A sender for raw packets on this connection.
    pub fn packet_sender(&self) -> PacketSender {
        PacketSender::new(self.handle.conn.clone())
    }

    /// Receives the raw packets the server sends with operation `op`, in order. Registering an
    /// operation again replaces the earlier receiver. When the receiver falls
    /// `config.stream_buffer` packets behind, the connection waits for it (nothing is dropped).
    pub fn raw_packets(&self, op: u16) -> Result<RawPackets, Error> {
        check_op(op)?;
        let (tx, rx) = mpsc::channel(self.handle.conn.config().stream_buffer.max(1));
        self.handle.raw.insert(op, tx);
        Ok(RawPackets::new(rx))
    }

    /// Arranges for frpc to stop reading as soon as no call is pending, so that the reply to the
    /// next call is the last packet parsed: bytes the server sends right behind it stay unparsed
    /// and come back from [`Client::into_raw`]. Arm it just before the last call.
    pub fn arm_takeover(&self) {
        self.handle.inflight.lock().takeover_armed = true;
    }

    /// Turns frpc off and hands back the TCP stream, plus the bytes already read from it that
    /// no packet consumed (Go loses those). Whatever was queued is flushed first. Pending calls
    /// fail; other clones of this client see a closed connection.
    pub async fn into_raw(self) -> Result<(TcpStream, BytesMut), Error> {
        let tasks = self
            .handle
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| Error::closed("the connection was already taken over (or is TLS)"))?;
        self.handle.conn.take_over();
        Ok(tasks.into_raw().await?)
    }

    /// Sends one unary request and waits for the reply's content.
    pub(crate) async fn unary(&self, op: u16, content: Bytes) -> Reply {
        let conn = &self.handle.conn;
        conn.check_len(content.len())?;
        let (tx, rx) = oneshot::channel();
        let id = self.handle.inflight.register(op, tx, conn)?;
        let mut pending = PendingCall {
            inflight: &self.handle.inflight,
            key: key(op, id),
            rx: Some(rx),
        };
        conn.send(Packet::new(id, op, content)).await?;
        let rx = pending.rx.as_mut().expect("receiver present until drop");
        let reply = match self.timeout {
            None => rx.await,
            Some(limit) => match tokio::time::timeout(limit, rx).await {
                Ok(reply) => reply,
                Err(_) => return Err(Error::Timeout(limit)),
            },
        };
        if reply.is_ok() {
            // The dispatcher removed the entry when it handed the reply over.
            pending.rx = None;
        }
        reply.unwrap_or_else(|_| Err(conn.closed_error()))
    }
}

fn key(op: u16, id: u16) -> u32 {
    (u32::from(op) << 16) | u32::from(id)
}

#[derive(Debug, Default)]
struct Inflight {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    calls: IdMap<u32, oneshot::Sender<Reply>>,
    next_ids: IdMap<u16, u16>,
    closed: bool,
    takeover_armed: bool,
}

impl Inflight {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Picks the method's next free id (Go's pre-increment counter: first id 1) and registers
    /// the caller under it.
    fn register(&self, op: u16, tx: oneshot::Sender<Reply>, conn: &Connection) -> Result<u16, Error> {
        let mut table = self.lock();
        if table.closed {
            return Err(conn.closed_error());
        }
        let mut id = table.next_ids.get(&op).copied().unwrap_or(0);
        for _ in 0..=u16::MAX {
            id = id.wrapping_add(1);
            if !table.calls.contains_key(&key(op, id)) {
                table.next_ids.insert(op, id);
                table.calls.insert(key(op, id), tx);
                return Ok(id);
            }
        }
        Err(Error::closed(format!(
            "65,536 calls of operation {op} already in flight"
        )))
    }

    /// Hands a reply to its caller; a reply nobody waits for (timed out, dropped) is discarded.
    /// Returns whether an armed takeover should happen now.
    fn complete(&self, op: u16, id: u16, content: Bytes) -> bool {
        let (waiter, take_over) = {
            let mut table = self.lock();
            let waiter = table.calls.remove(&key(op, id));
            (waiter, table.takeover_armed && table.calls.is_empty())
        };
        match waiter {
            Some(tx) => {
                let _ = tx.send(Ok(content));
            }
            None => tracing::trace!(op, id, "dropping a reply nobody waits for"),
        }
        take_over
    }

    /// Fails every pending call at once and refuses new ones.
    fn fail_all(&self, conn: &Connection) {
        let calls = {
            let mut table = self.lock();
            table.closed = true;
            std::mem::take(&mut table.calls)
        };
        for (_, tx) in calls {
            let _ = tx.send(Err(conn.closed_error()));
        }
    }
}

/// Removes a call's entry when the caller stops waiting (timeout, or its future dropped).
struct PendingCall<'a> {
    inflight: &'a Inflight,
    key: u32,
    rx: Option<oneshot::Receiver<Reply>>,
}

impl Drop for PendingCall<'_> {
    fn drop(&mut self) {
        let Some(rx) = self.rx.take() else { return };
        drop(rx);
        let mut table = self.inflight.lock();
        // Only our own entry: once our receiver is gone its sender reports closed, while a newer
        // call that reused the id after our reply landed still has a live receiver.
        if table.calls.get(&self.key).is_some_and(|tx| tx.is_closed()) {
            table.calls.remove(&self.key);
        }
    }
}

/// Receivers of raw packets, by operation.
#[derive(Debug, Default)]
struct RawRoutes {
    any: AtomicBool,
    routes: Mutex<IdMap<u16, mpsc::Sender<Packet>>>,
}

impl RawRoutes {
    fn insert(&self, op: u16, tx: mpsc::Sender<Packet>) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(op, tx);
        self.any.store(true, Ordering::Release);
    }

    /// The receiver for `op`, if any (without locking when none was ever registered).
    fn get(&self, op: u16) -> Option<mpsc::Sender<Packet>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&op)
            .cloned()
    }
}

struct ClientDispatch {
    inflight: Arc<Inflight>,
    raw: Arc<RawRoutes>,
}

impl Dispatch for ClientDispatch {
    async fn packet(&self, conn: &Arc<Connection>, packet: Packet) {
        if let Some(tx) = self.raw.get(packet.op) {
            let _ = tx.send(packet).await;
            return;
        }
        if self.inflight.complete(packet.op, packet.id, packet.content) {
            conn.take_over();
        }
    }

    async fn new_stream(&self, _conn: &Arc<Connection>, id: u16, _first: Bytes) {
        // Servers never open streams toward clients in fRPC; like Go's client, drop them.
        tracing::trace!(stream = id, "dropping a stream the server opened");
    }

    fn closed(&self, conn: &Arc<Connection>) {
        self.inflight.fail_all(conn);
    }
}
