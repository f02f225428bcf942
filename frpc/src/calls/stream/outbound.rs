//! [`StreamSender`]: the sending end of a stream, waiting for credit under flow control.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use bytes::Bytes;
use frpc_wire::polyglot::Message;
use frpc_wire::{Packet, op};

use crate::calls::{codec, ext};
use crate::status::{Error, Status};

use super::bridge::BridgedSender;
use super::guard::*;

/// Sends messages on a stream: the server's response stream, or the client's request stream.
///
/// Server-streaming and bidi methods get one as their `outbound`; each `send` waits while the
/// connection's write queue is full and, between frpc peers (flow control), while the peer's
/// consumer is a whole window behind; it fails once the peer has gone. Cheap to clone (to send
/// from several tasks). A handler that returns `Ok` while a clone lives (a task it spawned,
/// as a tonic handler returns a `ReceiverStream`) leaves its stream open until the last clone
/// is dropped, or until the server begins shutting down (the stream then ends with
/// `UNAVAILABLE`), on the gRPC face as on fRPC; an `Err` ends it at once, and later sends fail
/// with [`Error::StreamEnded`] (on the gRPC face, [`Error::Cancelled`]):
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Count { pub n: u32 }
/// #[frpc::service(package = "demo")]
/// pub trait Numbers {
///     /// Server streaming: counts from 0 up to the request's number.
///     async fn count(
///         &self,
///         ctx: &frpc::Context,
///         request: Count,
///         outbound: frpc::StreamSender<Count>,
///     ) -> Result<(), frpc::Status>;
///     /// Client streaming: sums what the client sends.
///     async fn sum(
///         &self,
///         ctx: &frpc::Context,
///         inbound: frpc::Streaming<Count>,
///     ) -> Result<Count, frpc::Status>;
/// }
///
/// struct Svc;
///
/// impl Numbers for Svc {
///     async fn count(
///         &self,
///         _ctx: &frpc::Context,
///         request: Count,
///         outbound: frpc::StreamSender<Count>,
///     ) -> Result<(), frpc::Status> {
///         for n in 0..request.n {
///             outbound.send(Count { n }).await?;
///         }
///         Ok(()) // the stream ends (EOF); an Err would reach the client as its last item
///     }
///
///     async fn sum(
///         &self,
///         _ctx: &frpc::Context,
///         mut inbound: frpc::Streaming<Count>,
///     ) -> Result<Count, frpc::Status> {
///         let mut total = 0;
///         while let Some(item) = inbound.message().await? {
///             total += item.n;
///         }
///         Ok(Count { n: total })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(NumbersServer::new(Svc))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///     let client = NumbersClient::connect(addr).await?;
///
///     let mut counts = client.count(Count { n: 5 }).await?;
///     let mut got = Vec::new();
///     while let Some(item) = counts.message().await? {
///         got.push(item.n);
///     }
///     assert_eq!(got, [0, 1, 2, 3, 4]);
///     Ok(())
/// }
/// ```
pub struct StreamSender<T>(pub(super) Sending<T>);

/// Where a [`StreamSender`]'s messages go: an fRPC stream, or (the gRPC face) a stream another
/// protocol carries out of the same handler.
pub(super) enum Sending<T> {
    Frpc(FrpcSender<T>),
    Bridged(BridgedSender<T>),
}

/// The outbound half of an fRPC stream: its packets, credit and timers.
pub(super) struct FrpcSender<T> {
    pub(super) guard: Arc<StreamGuard>,
    pub(super) _message: PhantomData<fn(T)>,
}

impl<T> fmt::Debug for StreamSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Sending::Frpc(sender) => f
                .debug_struct("StreamSender")
                .field("id", &sender.guard.id)
                .finish(),
            Sending::Bridged(sender) => sender.fmt(f),
        }
    }
}

impl<T> Clone for StreamSender<T> {
    fn clone(&self) -> Self {
        StreamSender(match &self.0 {
            Sending::Frpc(sender) => Sending::Frpc(FrpcSender::counted(sender.guard.clone())),
            Sending::Bridged(sender) => Sending::Bridged(sender.clone()),
        })
    }
}

impl<T> Drop for FrpcSender<T> {
    fn drop(&mut self) {
        self.guard.senders.remove();
    }
}

impl<T> FrpcSender<T> {
    /// A sender of the stream `guard` shares, counted among its live senders.
    fn counted(guard: Arc<StreamGuard>) -> FrpcSender<T> {
        guard.senders.add();
        FrpcSender {
            guard,
            _message: PhantomData,
        }
    }
}

impl<T> StreamSender<T> {
    /// Resolves once nothing sent here can reach the peer any more: its connection closed, or
    /// the peer cancelled the stream (a gRPC call's: its client went). A task that holds a
    /// clone while it waits for something to send (a subscription) selects on this, as on a
    /// `tokio::sync::mpsc::Sender::closed`, to end when its client goes instead of at its next
    /// `send`:
    ///
    #[cfg_attr(feature = "macros", doc = "```no_run")]
    #[cfg_attr(not(feature = "macros"), doc = "```ignore")]
    /// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
    /// # pub struct Event { pub text: String }
    /// # async fn forward(outbound: frpc::StreamSender<Event>, mut events: tokio::sync::broadcast::Receiver<Event>) {
    /// loop {
    ///     tokio::select! {
    ///         event = events.recv() => {
    ///             let Ok(event) = event else { break };
    ///             if outbound.send(event).await.is_err() {
    ///                 break;
    ///             }
    ///         }
    ///         () = outbound.closed() => break,
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn closed(&self) {
        match &self.0 {
            Sending::Frpc(sender) => {
                let guard = &sender.guard;
                let cancelled = async {
                    match &guard.ext.cancel {
                        Some(state) => state.cancelled().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = guard.conn.closed() => {}
                    () = cancelled => {}
                }
            }
            Sending::Bridged(sender) => sender.closed().await,
        }
    }

    /// The stream id (0 for a stream another protocol carries: a gRPC call's).
    pub fn id(&self) -> u16 {
        match &self.0 {
            Sending::Frpc(sender) => sender.guard.id,
            Sending::Bridged(_) => 0,
        }
    }

    /// Whether dropping the stream's last handle tells the peer to cancel it.
    pub(super) fn cancels_on_drop(&self) -> bool {
        match &self.0 {
            Sending::Frpc(sender) => sender.guard.cancels_on_drop(),
            Sending::Bridged(_) => false,
        }
    }

    /// Ends this side's half from a `Drop` (fRPC streams), so the peer sees the end.
    pub(super) fn eof_detached(&self) {
        if let Sending::Frpc(sender) = &self.0 {
            eof_detached(&sender.guard);
        }
    }
}

impl<T: Message> StreamSender<T> {
    pub(super) fn new(guard: Arc<StreamGuard>) -> StreamSender<T> {
        StreamSender(Sending::Frpc(FrpcSender::new(guard)))
    }

    /// Sends one message, waiting while the connection's write queue is full, and for
    /// flow-control credit when the peer's window is used up. Fails with [`Error::TooLarge`] for
    /// a message over the content limit (the stream stays usable), and on a server that began
    /// shutting down with [`Error::ShuttingDown`] (the handler should return: its error and
    /// `EOF` still reach the client).
    pub async fn send(&self, message: T) -> Result<(), Error> {
        match &self.0 {
            Sending::Frpc(sender) => sender.send(message).await,
            Sending::Bridged(sender) => {
                let content = sender.encode(&message, true);
                drop(message);
                sender.send(content).await
            }
        }
    }

    /// Sends one last message even once the server began shutting down, as a
    /// client-streaming call's one reply goes: health's `Watch` tells its watchers the server
    /// is going (`NOT_SERVING`) before its stream ends.
    #[cfg_attr(
        not(feature = "macros"),
        allow(dead_code, reason = "health's, which needs macros")
    )]
    pub(crate) async fn send_last(&self, message: T) -> Result<(), Error> {
        match &self.0 {
            Sending::Frpc(sender) => sender.send_reply(message).await,
            Sending::Bridged(sender) => sender.send(sender.encode(&message, false)).await,
        }
    }

    /// Sends one message by reference.
    pub async fn send_ref(&self, message: &T) -> Result<(), Error> {
        match &self.0 {
            Sending::Frpc(sender) => sender.send_ref(message).await,
            Sending::Bridged(sender) => sender.send(sender.encode(message, true)).await,
        }
    }

    /// Sends a client-streaming call's one reply: like a unary reply, it goes out during a
    /// shutdown too.
    pub(crate) async fn send_reply(&self, message: T) -> Result<(), Error> {
        match &self.0 {
            Sending::Frpc(sender) => sender.send_reply(message).await,
            Sending::Bridged(sender) => {
                let content = sender.encode(&message, false);
                drop(message);
                sender.send(content).await
            }
        }
    }

    /// Ends this side's half (`EOF`). A bridged stream ends with its handler's outcome, which
    /// its own protocol carries: nothing to send.
    pub(super) async fn send_eof(&self) -> Result<(), Error> {
        match &self.0 {
            Sending::Frpc(sender) => sender.send_eof().await,
            Sending::Bridged(_) => Ok(()),
        }
    }

    /// Ends a client's request stream: `EOF` on an fRPC stream, the other protocol's
    /// half-close on a bridged one.
    pub(super) async fn close(&mut self) -> Result<(), Error> {
        match &mut self.0 {
            Sending::Frpc(sender) => sender.send_eof().await,
            Sending::Bridged(sender) => {
                sender.close();
                Ok(())
            }
        }
    }

    /// Sends the handler's error (fRPC streams; see [`StreamSender::send_eof`]).
    pub(super) async fn send_error(&self, status: &Status) -> Result<(), Error> {
        match &self.0 {
            Sending::Frpc(sender) => sender.send_error(status).await,
            Sending::Bridged(_) => Ok(()),
        }
    }

    /// Waits until no other clone of this sender is left (see [`FrpcSender::others_gone`]), on
    /// an fRPC stream and a bridged one (the gRPC face's) alike.
    pub(crate) async fn others_gone(&self, ctx: &crate::Context) -> Result<(), Status> {
        match &self.0 {
            Sending::Frpc(sender) => sender.others_gone(ctx).await,
            Sending::Bridged(sender) => sender.others_gone().await.map_err(Status::from),
        }
    }

    /// Runs a server handler (see [`FrpcSender::started`]).
    pub(crate) async fn started<R>(
        &self,
        handler: impl Future<Output = Result<R, Status>>,
    ) -> Result<R, Status> {
        match &self.0 {
            Sending::Frpc(sender) => sender.started(handler).await,
            Sending::Bridged(_) => handler.await,
        }
    }
}

impl<T: Message> FrpcSender<T> {
    pub(super) fn new(guard: Arc<StreamGuard>) -> FrpcSender<T> {
        FrpcSender::counted(guard)
    }

    pub(super) async fn send(&self, message: T) -> Result<(), Error> {
        self.check_open()?;
        let content = self.encode(&message);
        drop(message);
        self.send_raw(content, true).await
    }

    pub(super) async fn send_ref(&self, message: &T) -> Result<(), Error> {
        self.check_open()?;
        self.send_raw(self.encode(message), true).await
    }

    pub(super) async fn send_reply(&self, message: T) -> Result<(), Error> {
        self.send_raw(self.encode(&message), true).await
    }

    /// A stream sends no more messages once this side ended it (a clone outliving its
    /// handler's error, say: nothing would reach the peer), nor a server's once it began
    /// shutting down (never true on a client's connection).
    pub(super) fn check_open(&self) -> Result<(), Error> {
        if self.guard.ended.load(Ordering::Relaxed) {
            // Ended because the peer cancelled it (its handler dropped): that is the reason.
            return Err(match self.guard.is_cancelled() {
                true => Error::Cancelled,
                false => Error::StreamEnded,
            });
        }
        match self.guard.conn.is_draining() {
            true => Err(Error::ShuttingDown),
            false => Ok(()),
        }
    }

    /// Waits until this is the stream's last sender: a server handler returned `Ok` while a
    /// task it spawned still sends. Ends early, with the shutdown's error, once the server
    /// begins shutting down or the connection closes (the stream could send nothing more).
    pub(super) async fn others_gone(&self, ctx: &crate::Context) -> Result<(), Status> {
        let shutting_down = async {
            ctx.shutting_down().await;
            Status::from(Error::ShuttingDown)
        };
        self.guard.senders.alone(shutting_down).await
    }

    /// Protobuf when the stream is (the client asked for it in the open message, on a connection
    /// that negotiated it), else polyglot.
    pub(super) fn encode(&self, message: &T) -> Bytes {
        codec::encode(message, self.guard.ext.bits & ext::EXT_PROTOBUF != 0)
    }

    /// Sends one content; a data message (`credit`) first takes its flow-control credit,
    /// waiting for the peer's grant when there is none.
    pub(super) async fn send_raw(&self, content: Bytes, credit: bool) -> Result<(), Error> {
        if self.guard.is_cancelled() {
            return Err(Error::Cancelled);
        }
        if let Some(err) = self.guard.failed_here() {
            return Err(err);
        }
        // Messages take credit; errors and `EOF` do not.
        #[cfg(feature = "metrics")]
        if credit {
            self.guard.counts.count_sent();
        }
        let packet = Packet::new(self.guard.id, op::STREAM, content);
        match self.guard.client.has_timers() {
            false => self.send_packet(packet, credit).await,
            // Client streams with a deadline or an idle timeout: their timers in a boxed
            // future, so that every other send stays a small one (futures are moved by copy).
            true => Box::pin(self.send_timed(packet, credit)).await,
        }
    }

    async fn send_packet(&self, packet: Packet, credit: bool) -> Result<(), Error> {
        // A message over the limit fails before it takes credit: the peer, which never gets
        // it, would never grant that credit back, and the stream would wait forever.
        self.guard.conn.check_len(packet.content.len())?;
        // A message waiting (for credit, or room in the write queue: a client that stops
        // reading) when its server begins shutting down fails as a later one would: it held
        // the shutdown for its whole grace period. Looked at only once the send waits; never
        // resolves on a client's connection. A stream's end (its error, `EOF`) still waits.
        tokio::select! {
            biased;
            sent = self.send_packet_now(packet, credit) => sent,
            () = self.guard.conn.drain_started(), if credit => Err(Error::ShuttingDown),
        }
    }

    async fn send_packet_now(&self, packet: Packet, credit: bool) -> Result<(), Error> {
        if credit {
            self.take_credit(packet.content.len()).await?;
        }
        // A producer that ran out of credit sends in bursts (a grant lets half a window go at
        // once) into a pipeline the wait has emptied. The direct path would write each message
        // with a syscall of its own (the window keeps too little in flight to fill the socket,
        // which is what moves a plain stream onto the batching queue); the queue lets the
        // writer task write the burst in a few.
        let conn = &self.guard.conn;
        match self.guard.bulk.load(Ordering::Relaxed) {
            true => conn.queue(packet).await,
            false => conn.send(packet).await,
        }
    }

    /// Takes a data message's flow-control credit (a message, and its bytes where windows
    /// count bytes): at once when the peer's grants cover it, else waiting in a boxed future.
    async fn take_credit(&self, len: usize) -> Result<(), Error> {
        let Some(window) = &self.guard.send_credit else {
            return Ok(()); // no flow control
        };
        let message = window.try_acquire().map(|permit| permit.forget()).is_ok();
        if message
            && self
                .guard
                .send_bytes
                .as_ref()
                .is_none_or(|bytes| bytes.try_take(len))
        {
            return Ok(());
        }
        Box::pin(self.wait_credit(len, message)).await
    }

    /// Waits for the credit [`take_credit`](Self::take_credit) found missing. A closed window
    /// (the stream or connection ended) lets the send go on, as without flow control: it then
    /// fails on a closed connection, or the peer drops it; a cancelled stream's send fails.
    async fn wait_credit(&self, len: usize, message_taken: bool) -> Result<(), Error> {
        self.guard.bulk.store(true, Ordering::Relaxed);
        if !message_taken
            && let Some(window) = &self.guard.send_credit
            && let Ok(permit) = window.acquire().await
        {
            permit.forget();
        }
        if let Some(bytes) = &self.guard.send_bytes
            && !bytes.try_take(len)
        {
            bytes.take(len).await;
        }
        if self.guard.is_cancelled() {
            return Err(Error::Cancelled);
        }
        self.guard.failed_here().map_or(Ok(()), Err)
    }

    /// [`send_packet`](Self::send_packet) within the client stream's idle timeout and the
    /// call's deadline.
    async fn send_timed(&self, packet: Packet, credit: bool) -> Result<(), Error> {
        let send = async {
            match self.guard.client.idle {
                None => self.send_packet(packet, credit).await,
                // Waiting for room in the write queue counts as idle too.
                Some(limit) => tokio::time::timeout(limit, self.send_packet(packet, credit))
                    .await
                    .unwrap_or(Err(Error::Timeout(limit))),
            }
        };
        // The call's deadline bounds every send of a client stream.
        let Some((at, limit)) = self.guard.client.deadline else {
            return send.await;
        };
        if let Some(err) = self.guard.client.expired() {
            self.guard.expire();
            return Err(err);
        }
        match tokio::time::timeout_at(at, send).await {
            Ok(result) => result,
            Err(_) => {
                self.guard.expire();
                Err(Error::Timeout(limit))
            }
        }
    }

    pub(super) async fn send_eof(&self) -> Result<(), Error> {
        self.guard.ended.store(true, Ordering::Relaxed);
        self.send_raw(self.guard.eof(), false).await
    }

    /// Runs a server handler; with open acknowledgement, sends OPENED once its first poll is
    /// over (it has started: whatever it set up before its first wait, a subscription say, is
    /// in place), unless that poll already failed it, so the client's open fails with that
    /// status instead.
    pub(super) async fn started<R>(
        &self,
        handler: impl Future<Output = Result<R, Status>>,
    ) -> Result<R, Status> {
        let Some(window) = self.guard.ext.ack_window else {
            return handler.await;
        };
        let mut handler = std::pin::pin!(handler);
        let first = std::future::poll_fn(|cx| Poll::Ready(handler.as_mut().poll(cx))).await;
        if let Poll::Ready(Err(status)) = first {
            return Err(status);
        }
        let opened = ext::stream_window(ext::OPENED, self.guard.id, window);
        let _ = self.guard.conn.send(opened).await;
        match first {
            Poll::Ready(result) => result,
            Poll::Pending => handler.await,
        }
    }

    pub(super) async fn send_error(&self, status: &Status) -> Result<(), Error> {
        self.send_raw(self.guard.error(status), false).await
    }
}

/// Ends our half of a stream from a `Drop`, so the peer's handler sees the end.
fn eof_detached(guard: &StreamGuard) {
    if !guard.conn.is_closed() {
        let _ = guard
            .conn
            .try_send(Packet::new(guard.id, op::STREAM, guard.eof()));
    }
}
