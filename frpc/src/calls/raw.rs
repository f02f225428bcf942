//! Custom messaging beside RPCs: raw packets on operations no service uses (pub/sub, say).
//! Calls floor: the sender wraps the transport's connection; the client's receivers are kept
//! here by operation (a server's raw routes are handlers, kept by the server).

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use frpc_wire::{Packet, op};
use tokio::sync::mpsc;

use crate::hash::IdMap;
use crate::status::Error;
use crate::transport::connection::Connection;

/// Sends raw packets on one connection; cheap to clone and keep (a broker keeps one per
/// subscriber to push messages later).
#[derive(Clone)]
pub struct PacketSender {
    /// `None` for a gRPC call's sender: there is no fRPC connection to send on.
    conn: Option<Arc<Connection>>,
    peer: std::net::SocketAddr,
}

impl fmt::Debug for PacketSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacketSender").field("peer", &self.peer).finish()
    }
}

impl PacketSender {
    pub(crate) fn new(conn: Arc<Connection>) -> PacketSender {
        PacketSender {
            peer: conn.peer(),
            conn: Some(conn),
        }
    }

    /// A sender without a connection (a gRPC call's): always closed.
    #[cfg_attr(not(feature = "grpc"), allow(dead_code))]
    pub(crate) fn detached(peer: std::net::SocketAddr) -> PacketSender {
        PacketSender { conn: None, peer }
    }

    fn conn(&self) -> Result<&Arc<Connection>, Error> {
        self.conn
            .as_ref()
            .ok_or_else(|| Error::Config("a gRPC call has no fRPC connection for raw packets".into()))
    }

    /// Sends a packet with operation `op` (10 or more: 0–9 are Frisbee's) and id `id`, waiting
    /// while the connection's write queue is full.
    pub async fn send(&self, op: u16, id: u16, content: impl Into<Bytes>) -> Result<(), Error> {
        check_op(op)?;
        self.conn()?.send(Packet::new(id, op, content)).await
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.peer
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.conn.as_ref().is_none_or(|conn| conn.is_closed())
    }

    /// Resolves when the connection closes.
    pub async fn closed(&self) {
        if let Some(conn) = &self.conn {
            conn.closed().await
        }
    }
}

pub(crate) fn check_op(op: u16) -> Result<(), Error> {
    if op::is_reserved(op) {
        return Err(Error::Config(format!(
            "operation {op} is reserved by Frisbee (0-9)"
        )));
    }
    if op == super::ext::OP {
        return Err(Error::Config(format!(
            "operation {op} (0xFFFF) is reserved for frpc's extension negotiation"
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

/// A client's receivers of raw packets, by operation.
#[derive(Debug, Default)]
pub(crate) struct RawRoutes {
    any: AtomicBool,
    routes: Mutex<IdMap<u16, mpsc::Sender<Packet>>>,
}

impl RawRoutes {
    /// Registers the receiver of `op`, replacing an earlier one.
    pub(crate) fn insert(&self, op: u16, tx: mpsc::Sender<Packet>) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(op, tx);
        self.any.store(true, Ordering::Release);
    }

    /// The receiver for `op`, if any (without locking when none was ever registered).
    pub(crate) fn get(&self, op: u16) -> Option<mpsc::Sender<Packet>> {
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
