//! Custom messaging beside RPCs: raw packets on operations no service uses (pub/sub, say), and
//! handing the TCP connection back (takeover).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use bytes::{Bytes, BytesMut};
use frpc_wire::{Packet, op};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::codegen::BoxFuture;
use crate::connection::Connection;
use crate::context::Context;
use crate::status::Error;

/// Sends raw packets on one connection; cheap to clone and keep (a broker keeps one per
/// subscriber to push messages later).
#[derive(Clone)]
pub struct PacketSender {
    conn: Arc<Connection>,
}

impl fmt::Debug for PacketSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacketSender")
            .field("peer", &self.conn.peer())
            .finish()
    }
}

impl PacketSender {
    pub(crate) fn new(conn: Arc<Connection>) -> PacketSender {
        PacketSender { conn }
    }

    /// Sends a packet with operation `op` (10 or more: 0–9 are Frisbee's) and id `id`, waiting
    /// while the connection's write queue is full.
    pub async fn send(&self, op: u16, id: u16, content: impl Into<Bytes>) -> Result<(), Error> {
        check_op(op)?;
        self.conn.send(Packet::new(id, op, content)).await
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.conn.peer()
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// Resolves when the connection closes.
    pub async fn closed(&self) {
        self.conn.closed().await
    }
}

pub(crate) fn check_op(op: u16) -> Result<(), Error> {
    if op::is_reserved(op) {
        return Err(Error::Config(format!(
            "operation {op} is reserved by Frisbee (0-9)"
        )));
    }
    Ok(())
}

/// Raw packets received for one operation, in arrival order. Also a [`futures_core::Stream`].
#[derive(Debug)]
pub struct RawPackets {
    rx: mpsc::Receiver<Packet>,
}

impl RawPackets {
    pub(crate) fn new(rx: mpsc::Receiver<Packet>) -> RawPackets {
        RawPackets { rx }
    }

    /// The next packet; `None` once the connection has closed.
    pub async fn next_packet(&mut self) -> Option<Packet> {
        self.rx.recv().await
    }
}

impl futures_core::Stream for RawPackets {
    type Item = Packet;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Packet>> {
        self.rx.poll_recv(cx)
    }
}

/// A server's handler for raw packets on one operation (see [`crate::Builder::route`]).
pub(crate) type RawHandler = Arc<dyn Fn(Context, Packet) -> BoxFuture<Option<Bytes>> + Send + Sync>;

pub(crate) fn raw_handler<F, Fut>(handler: F) -> RawHandler
where
    F: Fn(Context, Packet) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Bytes>> + Send + 'static,
{
    Arc::new(move |ctx, packet| Box::pin(handler(ctx, packet)))
}

type RawConnection = std::io::Result<(TcpStream, BytesMut)>;

/// A server connection's takeover slot, shared by its handlers and its serving task.
#[derive(Debug, Default)]
pub(crate) struct Takeover {
    requested: AtomicBool,
    tx: Mutex<Option<oneshot::Sender<RawConnection>>>,
}

impl Takeover {
    pub(crate) fn request(&self) -> Result<TakeConnection, Error> {
        if self.requested.swap(true, Ordering::SeqCst) {
            return Err(Error::closed("the connection is already being taken over"));
        }
        let (tx, rx) = oneshot::channel();
        *self.tx.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        Ok(TakeConnection { rx })
    }

    pub(crate) fn requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    pub(crate) fn deliver(&self, raw: RawConnection) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send(raw);
        }
    }
}

/// The connection of a call, handed back once the call's reply is flushed: the TCP stream and
/// the bytes already read from it that no packet consumed. See [`Context::take_connection`].
#[derive(Debug)]
pub struct TakeConnection {
    rx: oneshot::Receiver<RawConnection>,
}

impl Future for TakeConnection {
    type Output = Result<(TcpStream, BytesMut), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|result| match result {
            Ok(raw) => raw.map_err(Error::Io),
            Err(_) => Err(Error::closed(
                "the connection closed before it could be taken over",
            )),
        })
    }
}
