//! Handing the socket back (takeover): once a connection taken over has stopped, its read half,
//! the bytes read but not parsed and its write half are put back together into the TCP stream
//! and delivered to whoever asked. Part of the transport floor.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::status::Error;

/// Why a connection cannot be taken over.
pub(crate) const NO_TAKEOVER: &str =
    "connection takeover is TCP only: this connection is over TLS, a Unix socket or another stream";

/// The socket and the bytes read from it that no packet consumed.
pub(crate) type RawConnection = std::io::Result<(TcpStream, BytesMut)>;

/// What the reader leaves behind when it stops: its half and its unparsed bytes.
pub(crate) type ReadParts<R> = (R, BytesMut);

/// Puts a read and a write half back together (`OwnedReadHalf::reunite`, say).
pub(crate) type Join<R, W> = Box<dyn FnOnce(R, W) -> std::io::Result<TcpStream> + Send>;

/// A connection's takeover slot.
pub(crate) struct Handback {
    available: bool,
    requested: AtomicBool,
    /// The taker, and whether the writer is done with the slot (handed back or abandoned):
    /// a request after that would wait for ever.
    tx: Mutex<(Option<oneshot::Sender<RawConnection>>, bool)>,
}

impl fmt::Debug for Handback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handback")
            .field("available", &self.available)
            .field("requested", &self.requested())
            .finish()
    }
}

impl Handback {
    pub(crate) fn new(available: bool) -> Handback {
        Handback {
            available,
            requested: AtomicBool::new(false),
            tx: Mutex::new((None, false)),
        }
    }

    pub(crate) fn available(&self) -> bool {
        self.available
    }

    /// Registers the one taker; a second request fails.
    pub(crate) fn request(&self) -> Result<TakeConnection, Error> {
        if self.requested.swap(true, Ordering::SeqCst) {
            return Err(Error::closed("the connection is already being taken over"));
        }
        let (tx, rx) = oneshot::channel();
        let mut slot = self.lock();
        if slot.1 {
            return Err(Error::closed(
                "the connection closed before it could be taken over",
            ));
        }
        slot.0 = Some(tx);
        Ok(TakeConnection { rx })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<oneshot::Sender<RawConnection>>, bool)> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer is done with the slot: takes the taker, if there is one.
    fn finish(&self) -> Option<oneshot::Sender<RawConnection>> {
        let mut slot = self.lock();
        slot.1 = true;
        slot.0.take()
    }

    pub(crate) fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Drops a pending request: the connection failed instead of being handed back.
    pub(crate) fn abandon(&self) {
        self.finish();
    }

    /// Called by the writer once it has flushed and kept its half: waits for the reader's parts
    /// and delivers the reunited socket.
    pub(crate) async fn complete<R, W>(
        &self,
        write: W,
        read: oneshot::Receiver<ReadParts<R>>,
        join: Option<Join<R, W>>,
    ) {
        let raw = match (read.await, join) {
            (Ok((read, unparsed)), Some(join)) => join(read, write).map(|stream| (stream, unparsed)),
            (Err(_), _) => Err(std::io::Error::other(
                "the connection failed before it could be taken over",
            )),
            (_, None) => Err(std::io::Error::other(NO_TAKEOVER)),
        };
        if let Some(tx) = self.finish() {
            let _ = tx.send(raw);
        }
    }
}

/// The connection of a call, handed back once the call's reply is flushed: the TCP stream and
/// the bytes already read from it that no packet consumed. See
/// [`Context::take_connection`](crate::Context::take_connection).
#[derive(Debug)]
pub struct TakeConnection {
    rx: oneshot::Receiver<RawConnection>,
}

impl Future for TakeConnection {
    type Output = Result<(TcpStream, BytesMut), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|result| match result {
            Ok(raw) => raw.map_err(Error::Io),
            Err(_) => Err(Error::closed(
                "the connection closed before it could be taken over",
            )),
        })
    }
}
