//! [`Streaming`]: the receiving end of a stream, with flow-control credit given back as the
//! consumer reads.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use frpc_wire::DecodeError;
use frpc_wire::polyglot::{EOF_MESSAGE, Envelope, Message};

use crate::calls::ext::Window;
use crate::calls::{codec, ext};
use crate::status::{Code, Error, Status};

use super::bridge::BridgedStreaming;
use super::common::*;
use super::guard::*;
use super::table::*;

/// Inbound messages of a stream: the server's request stream, or the client's response stream.
///
/// Read with [`Streaming::message`] or as a [`futures_core::Stream`]. The peer's `EOF` ends it
/// (`Ok(None)` / `None`); a peer error is returned as [`Error::Status`] and ends it too.
///
/// Servers get one as the `inbound` of client-streaming and bidi methods; clients get one from
/// server-streaming calls:
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
///     // Server streaming: the client reads a `Streaming<Count>`.
///     let mut counts = client.count(Count { n: 3 }).await?;
///     let mut got = Vec::new();
///     while let Some(item) = counts.message().await? {
///         got.push(item.n);
///     }
///     assert_eq!(got, [0, 1, 2]);
///
///     // Client streaming: the server reads a `Streaming<Count>`.
///     let mut upload = client.sum().await?;
///     for n in [1, 2, 3] {
///         upload.send(Count { n }).await?;
///     }
///     assert_eq!(upload.close_and_recv().await?.n, 6);
///     Ok(())
/// }
/// ```
pub struct Streaming<T>(pub(super) Receiving<T>);

/// Where a [`Streaming`]'s messages come from: an fRPC stream, or (the gRPC face) a stream
/// another protocol carries into the same handler.
pub(super) enum Receiving<T> {
    Frpc(FrpcStreaming<T>),
    Bridged(BridgedStreaming<T>),
}

/// The inbound half of an fRPC stream: its table entry's channel, credit and timers.
pub(super) struct FrpcStreaming<T> {
    pub(super) inbound: Inbound,
    pub(super) guard: Arc<StreamGuard>,
    pub(super) done: bool,
    /// The idle timer (client streams with an idle timeout only), made on the first wait and
    /// re-armed at the start of each later one.
    pub(super) idle: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The call's deadline (client streams with a timeout only), made on the first wait.
    pub(super) deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    pub(super) waiting: bool,
    /// A content read while waiting for OPENED, not yet handed out.
    pub(super) peeked: Option<Bytes>,
    /// Messages read and not yet given back as credit (flow-controlled streams).
    pub(super) unacked: u32,
    /// Their bytes (flow control in bytes).
    pub(super) unacked_bytes: u32,
    /// A server's inbound stream: what it cannot decode is the client's bad argument.
    pub(super) server: bool,
    pub(super) _message: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Receiving::Frpc(stream) => f
                .debug_struct("Streaming")
                .field("id", &stream.guard.id)
                .field("done", &stream.done)
                .finish(),
            Receiving::Bridged(stream) => stream.fmt(f),
        }
    }
}

impl<T> Streaming<T> {
    /// The stream id (0 for a stream another protocol carries: a gRPC call's).
    pub fn id(&self) -> u16 {
        match &self.0 {
            Receiving::Frpc(stream) => stream.guard.id,
            Receiving::Bridged(_) => 0,
        }
    }
}

impl<T: Message> Streaming<T> {
    pub(super) fn new(inbound: Inbound, guard: Arc<StreamGuard>) -> Streaming<T> {
        Streaming(Receiving::Frpc(FrpcStreaming::new(inbound, guard)))
    }

    /// A server's inbound stream (see [`Error::InvalidMessage`]).
    pub(super) fn for_server(inbound: Inbound, guard: Arc<StreamGuard>) -> Streaming<T> {
        Streaming(Receiving::Frpc(FrpcStreaming::for_server(inbound, guard)))
    }

    /// Waits until the server accepted the stream (see [`FrpcStreaming::opened`]).
    pub(crate) async fn opened(&mut self) -> Result<(), Error> {
        match &mut self.0 {
            Receiving::Frpc(stream) => stream.opened().await,
            Receiving::Bridged(_) => Ok(()),
        }
    }

    /// The next message; `Ok(None)` once the peer has ended the stream.
    ///
    /// Cancel-safe: dropped before it completes (the other branch of a `tokio::select!` won),
    /// it has taken no message, and the next call returns it.
    pub async fn message(&mut self) -> Result<Option<T>, Error> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        match &mut self.0 {
            Receiving::Frpc(stream) => stream.poll_message(cx),
            Receiving::Bridged(stream) => stream.poll_message(cx),
        }
    }

    /// A client-streaming call's one reply came. On fRPC the server is done (its `EOF`
    /// follows at once, nothing to cancel: see [`FrpcStreaming::finish_ok`]); the `EOF` is
    /// read where it may carry response metadata, so the call's outcome is the same whether
    /// or not its caller collects it (metadata over our limit fails it, as a unary call's). On
    /// a bridged stream the call's outcome follows (gRPC's trailers: their metadata, or an
    /// error status after all), read here.
    pub(super) async fn end_of_reply(&mut self) -> Result<(), Error> {
        match &mut self.0 {
            Receiving::Frpc(stream) if !stream.end_carries_metadata() => {
                stream.finish_ok();
                Ok(())
            }
            _ => match self.message().await? {
                None => Ok(()),
                Some(_) => Err(Error::Status(Status::internal(
                    "the server sent more than one response to a client-streaming call",
                ))),
            },
        }
    }
}

impl<T: Message> FrpcStreaming<T> {
    pub(super) fn new(inbound: Inbound, guard: Arc<StreamGuard>) -> FrpcStreaming<T> {
        FrpcStreaming {
            inbound,
            guard,
            done: false,
            idle: None,
            deadline: None,
            waiting: false,
            peeked: None,
            unacked: 0,
            unacked_bytes: 0,
            server: false,
            _message: PhantomData,
        }
    }

    /// A server's inbound stream (see [`Error::InvalidMessage`]).
    pub(super) fn for_server(inbound: Inbound, guard: Arc<StreamGuard>) -> FrpcStreaming<T> {
        let mut stream = FrpcStreaming::new(inbound, guard);
        stream.server = true;
        stream
    }

    /// The error for a message that cannot be decoded: the client's bad argument on a server,
    /// a decode failure on a client.
    pub(super) fn undecodable(&self, err: DecodeError) -> Error {
        match self.server {
            true => Error::InvalidMessage(err.to_string()),
            false => Error::Decode(err),
        }
    }

    /// The error for a message whose extension header is malformed.
    pub(super) fn malformed(&self, err: String) -> Error {
        let text = format!("malformed stream message: {err}");
        match self.server {
            true => Error::InvalidMessage(text),
            false => Error::Status(Status::internal(text)),
        }
    }

    /// The error for a header this side cannot take: malformed (see
    /// [`malformed`](Self::malformed)), or metadata over `max_metadata_size`, a limit of ours
    /// (RESOURCE_EXHAUSTED, as a unary reply's).
    fn bad_header(&self, err: ext::HeaderError) -> Error {
        match err {
            ext::HeaderError::Malformed(reason) => self.malformed(reason),
            too_large => Error::Status(Status::resource_exhausted(too_large.to_string())),
        }
    }

    /// Waits until the server accepted the stream (its OPENED, or anything it sent on the
    /// stream), when the stream asked for it; fails with the server's refusal (its status, or
    /// the stream's end). Without open acknowledgement (Go peers) it returns at once.
    pub(crate) async fn opened(&mut self) -> Result<(), Error> {
        if !std::mem::replace(&mut self.inbound.awaiting_ack, false) {
            return Ok(());
        }
        let Some(Buffered { content, .. }) = self.inbound.rx.recv().await else {
            self.finish();
            return Err(self.end_error());
        };
        if content.is_empty() {
            return Ok(()); // OPENED
        }
        let refused = is_control(&content) && content[..] != *EOF_MESSAGE;
        self.peeked = Some(content);
        if refused {
            // The server refused the stream, or its handler failed at once: its status.
            std::future::poll_fn(|cx| self.poll_message(cx)).await?;
        }
        Ok(())
    }

    /// Gives back credit for a data message of `len` bytes the consumer read: every quarter
    /// window (of messages, or of bytes) at once, so a stream costs one CREDIT packet per
    /// quarter window. A quarter, not a half: the grant reaches a producer that ran out of
    /// credit while three quarters of the window are still buffered here, so the consumer
    /// never runs dry while the producer refills the pipeline.
    pub(super) fn consumed(&mut self, len: usize) {
        let Some((_, window)) = &self.inbound.recv else {
            return;
        };
        self.unacked += 1;
        let mut bytes_due = false;
        if let Some(bytes) = &self.inbound.recv_bytes {
            let len = u32::try_from(len).unwrap_or(u32::MAX);
            self.unacked_bytes = self.unacked_bytes.saturating_add(len);
            bytes_due = self.unacked_bytes >= grant_every(bytes.window);
        }
        if (self.unacked < grant_every(*window) && !bytes_due) || self.done {
            return;
        }
        self.give_back();
    }

    /// Sends the peer the credit of what the consumer read since the last grant; nothing once
    /// the stream ended (this side failed it, say: what is left in its buffer is read, but
    /// the peer may send nothing more).
    fn give_back(&mut self) {
        let Some((credit, _)) = &self.inbound.recv else {
            return;
        };
        if self.inbound.end.get().is_some() {
            return;
        }
        let messages = std::mem::take(&mut self.unacked);
        let bytes = std::mem::take(&mut self.unacked_bytes);
        // Counted before the grant leaves, so the peer's next message finds it.
        credit.fetch_add(messages, Ordering::AcqRel);
        let bytes = self.inbound.recv_bytes.as_ref().map(|window| {
            window.give_back(bytes);
            bytes
        });
        let guard = &self.guard;
        guard
            .table
            .credit_back
            .give(&guard.conn, guard.id, Window { messages, bytes });
    }

    pub(super) fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        let poll = self.poll_content(cx);
        #[cfg(feature = "metrics")]
        if let Poll::Ready(result) = &poll {
            let counts = &self.guard.counts;
            match result {
                Ok(Some(_)) => counts.count_received(),
                Ok(None) => counts.end(Ok(())),
                Err(err) => counts.end(Err(err)),
            }
        }
        poll
    }

    fn poll_content(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        if let Some(err) = self.guard.client.expired() {
            return Poll::Ready(Err(self.expire(err)));
        }
        let content = match self.peeked.take() {
            Some(content) => content,
            None => loop {
                match self.inbound.rx.poll_recv(cx) {
                    // An OPENED mark nobody waited for.
                    Poll::Ready(Some(held)) if held.content.is_empty() => continue,
                    Poll::Ready(Some(held)) => break held.content,
                    Poll::Ready(None) => {
                        self.finish();
                        return Poll::Ready(Err(self.end_error()));
                    }
                    Poll::Pending => {
                        // Parked on an empty buffer: the reader hands the next message over
                        // as it is (see `table::detached`).
                        self.inbound.parked.store(true, Ordering::Release);
                        return self.poll_idle(cx);
                    }
                }
            },
        };
        self.waiting = false;
        if !is_control(&content) {
            self.consumed(content.len());
        }
        // An error with a status code, or the end with response metadata, from an frpc server
        // that accepted our offer (perhaps after this stream opened). No fRPC message starts
        // with the header byte.
        let (header, content) = match ext::has_prefix(&content) {
            false => (ext::Header::default(), content),
            true => match ext::split(&content, self.guard.conn.max_metadata_size()) {
                Ok(split) => split,
                Err(err) => {
                    self.finish();
                    return Poll::Ready(Err(self.bad_header(err)));
                }
            },
        };
        let code = header.code;
        Poll::Ready(
            match codec::decode::<T>(&content, self.guard.conn.decode_limits()) {
                Ok(Envelope::Message(message)) => Ok(Some(message)),
                Ok(Envelope::Error(text)) => {
                    // Anything after the first EOF (Go may send two) is ignored.
                    self.finish();
                    // The server's end carries the response metadata (none from Go servers).
                    if let Some(slot) = &self.guard.client.response {
                        slot.set(header.metadata);
                    }
                    match end_code(&text, code) {
                        Code::Ok => Ok(None),
                        code => Err(Error::Status(Status::with_code(code, text))),
                    }
                }
                Err(err) => Err(self.undecodable(err)),
            },
        )
    }

    /// Whether the peer's end may carry response metadata: the server took the metadata
    /// extension.
    fn end_carries_metadata(&self) -> bool {
        self.guard.ext.bits & ext::EXT_METADATA != 0
    }

    /// The stream is over on the peer's side.
    pub(super) fn finish(&mut self) {
        self.done = true;
        self.guard.finished.store(true, Ordering::Relaxed);
    }

    /// The stream is over, and well: a client-streaming call's response came (its `EOF`
    /// follows, and nobody reads it).
    pub(super) fn finish_ok(&mut self) {
        self.finish();
        #[cfg(feature = "metrics")]
        self.guard.counts.end(Ok(()));
    }

    /// The call's deadline passed: the stream is over here, and the server is told.
    fn expire(&mut self, err: Error) -> Error {
        self.done = true;
        self.guard.expire();
        err
    }

    /// Pending, or the call's deadline, or the idle timeout once no message came for that long
    /// since this wait began.
    pub(super) fn poll_idle(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        if let Some((at, limit)) = self.guard.client.deadline {
            let timer = self
                .deadline
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(self.expire(Error::Timeout(limit))));
            }
        }
        let Some(limit) = self.guard.client.idle else {
            return Poll::Pending;
        };
        let timer = self
            .idle
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if !std::mem::replace(&mut self.waiting, true) {
            // A new wait: the limit counts from now (the config caps it, so no overflow).
            timer.as_mut().reset(tokio::time::Instant::now() + limit);
        }
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.done = true;
        Poll::Ready(Err(Error::Timeout(limit)))
    }

    pub(super) fn end_error(&self) -> Error {
        match self.inbound.end.get() {
            Some(reason) => reason.error(self.guard.id),
            None => Error::closed("the peer closed the stream without EOF"),
        }
    }
}

/// How much of a `window` the consumer reads before its credit goes back: a quarter (at least
/// one). docs/extensions.md §9 describes this policy.
fn grant_every(window: u32) -> u32 {
    (window / 4).max(1)
}

impl<T: Message> futures_core::Stream for Streaming<T> {
    type Item = Result<T, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let done = match &this.0 {
            Receiving::Frpc(stream) => stream.done,
            Receiving::Bridged(stream) => stream.done,
        };
        if done {
            return Poll::Ready(None);
        }
        this.poll_message(cx).map(Result::transpose)
    }
}

impl<T> Unpin for Streaming<T> {}

/// How the peer ended a stream with the error `text` and `code` (its STATUS, if it sent one):
/// `Code::Ok` for the end (`EOF` without a code), else the error's code. `EOF` with a code is
/// an error whose text is "EOF" (a Go error passed on, say); an error cannot say OK.
fn end_code(text: &str, code: Option<Code>) -> Code {
    match (text, code) {
        ("EOF", None) => Code::Ok,
        (_, None | Some(Code::Ok)) => Code::Unknown,
        (_, Some(code)) => code,
    }
}

#[cfg(feature = "metrics")]
impl<T> FrpcStreaming<T> {
    /// A client stream dropped with the server's end among its unread messages (a caller that
    /// took what it wanted): the stream's metrics book that end, not the client's cancel.
    fn note_unread_end(&mut self) {
        let guard = &self.guard;
        if self.done
            || guard.client.observed.is_none()
            || guard.counts.code().is_some()
            || Arc::strong_count(guard) > 1
        {
            return;
        }
        let buffered = std::iter::from_fn(|| self.inbound.rx.try_recv().ok().map(|held| held.content));
        let Some(end) = self
            .peeked
            .take()
            .into_iter()
            .chain(buffered)
            .find(|content| is_control(content))
        else {
            return;
        };
        let (header, content) = match ext::split(&end, guard.conn.max_metadata_size()) {
            Ok(split) if ext::has_prefix(&end) => split,
            _ => (ext::Header::default(), end),
        };
        if let Ok(Envelope::Error(text)) = codec::decode::<()>(&content, guard.conn.decode_limits()) {
            guard.counts.end_with(end_code(&text, header.code));
        }
    }
}

impl<T> Drop for FrpcStreaming<T> {
    /// A consumer gone while the stream goes on (a server handler that stops reading but keeps
    /// sending): gives back the credit of what it never read, so the peer's sends do not stall.
    /// Later messages get theirs back from the reader.
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        self.note_unread_end();
        let Some((credit, _)) = &self.inbound.recv else {
            return;
        };
        if Arc::strong_count(&self.guard) == 1 || self.inbound.end.get().is_some() {
            return; // the whole stream goes, or it ended: nothing more to grant
        }
        self.inbound.rx.close();
        let is_data = |content: &Bytes| !content.is_empty() && !is_control(content);
        let mut unread = std::mem::take(&mut self.unacked);
        let mut unread_bytes = std::mem::take(&mut self.unacked_bytes);
        let mut count = |content: &Bytes| {
            if is_data(content) {
                unread += 1;
                unread_bytes = unread_bytes.saturating_add(u32::try_from(content.len()).unwrap_or(u32::MAX));
            }
        };
        if let Some(content) = self.peeked.take() {
            count(&content);
        }
        while let Ok(held) = self.inbound.rx.try_recv() {
            count(&held.content);
        }
        if unread > 0 {
            credit.fetch_add(unread, Ordering::AcqRel);
            let bytes = self.inbound.recv_bytes.as_ref().map(|window| {
                window.give_back(unread_bytes);
                unread_bytes
            });
            let guard = &self.guard;
            let grant = Window {
                messages: unread,
                bytes,
            };
            guard.table.credit_back.give(&guard.conn, guard.id, grant);
        }
    }
}
