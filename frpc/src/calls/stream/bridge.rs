//! Bridged streams: a streaming call another protocol carries, on either side. On a server
//! (the gRPC face) the same handler as an fRPC stream serves it: its
//! [`Streaming`](super::Streaming) reads the request contents a [`Source`] yields, its
//! [`StreamSender`](super::StreamSender) hands reply contents to a channel the other protocol
//! drains, both in the gRPC face's encoding ([`codec::Encoding::Grpc`]: a request is the bare
//! protobuf message, a reply its gRPC message frame, so neither is copied on the way). On a
//! client (`GrpcChannel`, see `bridged_call`) the roles swap: the requests go into the channel,
//! the replies come from the source, both in frpc's protobuf encoding (the marker, then the
//! message: the client's codec adds and strips the marker). No stream table, credit or
//! packets: the other protocol has its own flow control (HTTP/2's windows reach the sender
//! through the channel's bound and the source's polling), and it ends the stream with the
//! call's outcome.

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use frpc_wire::polyglot::{Envelope, Message};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::calls::budget::{ByteBudget, Share};
use crate::calls::codec;
use crate::calls::ext::CallState;
use crate::config::DecodeLimits;
use crate::metadata::Metadata;
use crate::status::Error;

use super::common::SenderCount;

/// The inbound contents of a bridged stream, each a protobuf message: a server's requests
/// bare, a client's replies behind the marker; an error ends the stream abnormally (the
/// peer's status, a message over the size limit, the call's timeout).
pub(crate) type Source = Pin<Box<dyn futures_core::Stream<Item = Result<Bytes, Error>> + Send>>;

/// What keeps a client's bridged call alive: the call is cancelled once every holder (its
/// sender, its source) is gone.
pub(crate) type Keep = Arc<dyn std::any::Any + Send + Sync>;

/// A message on its way to the other protocol. A server's reply holds its share of the
/// stream's byte budget until that protocol takes it: a peer that does not read holds the
/// handler back by bytes as well as by the channel's bound in messages.
pub(crate) struct Outgoing {
    #[cfg_attr(not(feature = "grpc"), allow(dead_code, reason = "read by the gRPC face"))]
    pub(crate) content: Bytes,
    _share: Option<Share>,
}

/// Where a bridged stream's outgoing messages go.
pub(crate) type Outbox = mpsc::Sender<Outgoing>;

/// What a bridged [`ServerStream`](super::ServerStream) is made of, until its handler splits it.
pub(crate) struct Bridge {
    /// The request contents.
    pub(crate) source: Source,
    /// What decoding them may cost.
    pub(crate) limits: DecodeLimits,
    /// Where the reply contents go.
    pub(crate) replies: Outbox,
    /// The bytes of replies the channel may hold (taken by a send, given back as the other
    /// protocol takes the reply; one larger reply alone).
    pub(crate) reply_bytes: Arc<ByteBudget>,
    /// Fires when the server begins shutting down: no more messages, as on fRPC streams.
    pub(crate) draining: CancellationToken,
    /// The response metadata as the first reply leaves.
    pub(crate) headers: Arc<Headers>,
}

/// A call's response metadata as it stood when its first reply was sent (gRPC sends it as the
/// response's headers, ahead of that reply), or when it was first asked for.
#[derive(Debug)]
pub(crate) struct Headers {
    state: Arc<CallState>,
    taken: OnceLock<Option<Metadata>>,
}

impl Headers {
    #[cfg(feature = "grpc")]
    pub(crate) fn new(state: Arc<CallState>) -> Headers {
        Headers {
            state,
            taken: OnceLock::new(),
        }
    }

    /// The headers' metadata: taken from the call on the first ask, the same ever after (what
    /// the handler sets later is the trailers').
    pub(crate) fn get(&self) -> Option<&Metadata> {
        self.taken.get_or_init(|| self.state.take_response()).as_ref()
    }
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge").finish_non_exhaustive()
    }
}

/// The inbound half of a bridged stream.
pub(crate) struct BridgedStreaming<T> {
    /// In a mutex so the handle stays `Sync` (the source need not be): polled through
    /// `get_mut`, never locked.
    source: Mutex<Source>,
    limits: DecodeLimits,
    pub(super) done: bool,
    /// A server's requests: what does not decode is the client's bad argument.
    server: bool,
    _message: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for BridgedStreaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming")
            .field("bridged", &true)
            .field("done", &self.done)
            .finish()
    }
}

impl<T: Message> BridgedStreaming<T> {
    pub(super) fn new(source: Source, limits: DecodeLimits, server: bool) -> BridgedStreaming<T> {
        BridgedStreaming {
            source: Mutex::new(source),
            limits,
            done: false,
            server,
            _message: PhantomData,
        }
    }

    /// The next message: `Ok(None)` at the end, the source's error once it failed; one that
    /// does not decode is [`Error::Decode`] (INTERNAL, what gRPC servers, tonic's included,
    /// answer a request they cannot parse).
    pub(super) fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        let source = self.source.get_mut().unwrap_or_else(|e| e.into_inner());
        let content = match ready!(source.as_mut().poll_next(cx)) {
            Some(Ok(content)) => content,
            Some(Err(err)) => {
                self.done = true;
                return Poll::Ready(Err(err));
            }
            None => {
                self.done = true;
                return Poll::Ready(Ok(None));
            }
        };
        // A server's requests come bare (the face's own decoder, no copy), a client's replies
        // behind the marker (`BytesCodec`).
        let decoded = match self.server {
            true => codec::decode_protobuf::<T>(content, self.limits),
            false => codec::decode::<T>(&content, self.limits),
        };
        Poll::Ready(match decoded {
            Ok(Envelope::Message(message)) => Ok(Some(message)),
            Ok(Envelope::Error(text)) => {
                Err(Error::InvalidMessage(format!("unexpected error message: {text}")))
            }
            Err(err) => Err(Error::Decode(err)),
        })
    }
}

/// The outbound half of a bridged stream. Cheap to clone.
pub(crate) struct BridgedSender<T> {
    /// `None` once a client closed its request stream.
    out: Option<Outbox>,
    side: Side,
    _message: PhantomData<fn(T)>,
}

/// What a bridged sender checks besides sending: a server's shutdown and headers, a client's
/// size limit and deadline.
#[derive(Clone)]
enum Side {
    Server {
        /// Fires when the server begins shutting down.
        draining: CancellationToken,
        headers: Arc<Headers>,
        senders: Arc<SenderCount>,
        /// The replies' bytes the channel may hold.
        budget: Arc<ByteBudget>,
    },
    Client {
        /// The largest request message (its protobuf bytes).
        max: usize,
        /// The call's deadline and timeout.
        deadline: Option<(Instant, Duration)>,
        /// Keeps the call alive while the sender lives (`None` once it closed).
        keep: Option<Keep>,
    },
}

impl<T> Clone for BridgedSender<T> {
    fn clone(&self) -> Self {
        if let Side::Server { senders, .. } = &self.side {
            senders.add();
        }
        BridgedSender {
            out: self.out.clone(),
            side: self.side.clone(),
            _message: PhantomData,
        }
    }
}

impl<T> Drop for BridgedSender<T> {
    fn drop(&mut self) {
        if let Side::Server { senders, .. } = &self.side {
            senders.remove();
        }
    }
}

impl<T> fmt::Debug for BridgedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamSender").field("bridged", &true).finish()
    }
}

impl<T> BridgedSender<T> {
    /// Waits until this is the stream's last sender (a server's: see [`SenderCount`]); ends
    /// early with the shutdown's error once the server begins shutting down.
    pub(super) async fn others_gone(&self) -> Result<(), Error> {
        let Side::Server {
            draining, senders, ..
        } = &self.side
        else {
            return Ok(());
        };
        let shutting_down = async {
            draining.cancelled().await;
            Error::ShuttingDown
        };
        senders.alone(shutting_down).await
    }

    /// Resolves once the other end of the channel is gone (the call ended, its client went);
    /// at once for a closed request stream.
    pub(super) async fn closed(&self) {
        if let Some(out) = &self.out {
            out.closed().await;
        }
    }

    /// Ends a client's request stream (the other protocol's half-close) and lets the call go
    /// once its replies are read. Later sends fail.
    pub(super) fn close(&mut self) {
        self.out = None;
        if let Side::Client { keep, .. } = &mut self.side {
            *keep = None;
        }
    }
}

impl<T: Message> BridgedSender<T> {
    /// A client's request sender: into `out` (`None`: the requests already went), within
    /// `max` bytes a message and the call's `deadline`, keeping the call alive.
    pub(super) fn client(
        out: Option<Outbox>,
        max: usize,
        deadline: Option<(Instant, Duration)>,
        keep: Keep,
    ) -> BridgedSender<T> {
        BridgedSender {
            out,
            side: Side::Client {
                max,
                deadline,
                keep: Some(keep),
            },
            _message: PhantomData,
        }
    }

    pub(super) fn new(bridge: &Bridge) -> BridgedSender<T> {
        let senders = Arc::new(SenderCount::default());
        senders.add();
        BridgedSender {
            out: Some(bridge.replies.clone()),
            side: Side::Server {
                draining: bridge.draining.clone(),
                headers: bridge.headers.clone(),
                senders,
                budget: bridge.reply_bytes.clone(),
            },
            _message: PhantomData,
        }
    }

    /// One message, to [`send`](Self::send): a server's reply as a gRPC message frame, a
    /// client's request in frpc's protobuf (the marker, then the message). Fails with [`Error::ShuttingDown`]
    /// once the server began shutting down, unless `stream` is off (a client-streaming
    /// call's one reply goes out during a shutdown, as a unary reply does); on a client with
    /// [`Error::TooLarge`] over the size limit (the stream stays usable).
    pub(super) fn encode(&self, message: &T, stream: bool) -> Result<Bytes, Error> {
        match &self.side {
            Side::Server { draining, .. } if stream && draining.is_cancelled() => Err(Error::ShuttingDown),
            // A gRPC message frame, which the face sends as it is.
            Side::Server { .. } => Ok(codec::encode_as(message, codec::Encoding::Grpc)),
            Side::Client { max, .. } => {
                let content = codec::encode(message, true);
                let len = content.len() - 1;
                match len > *max {
                    true => Err(Error::TooLarge {
                        len,
                        max: u32::try_from(*max).unwrap_or(u32::MAX),
                    }),
                    false => Ok(content),
                }
            }
        }
    }

    /// Sends one encoded message, waiting while the channel is full (the peer reads slower
    /// than this side sends); fails with [`Error::Cancelled`] once the call is over (the peer
    /// went, the handler returned, the request stream was closed) and on a client with
    /// [`Error::Timeout`] once its deadline passed.
    pub(super) async fn send(&self, content: Result<Bytes, Error>) -> Result<(), Error> {
        let content = content?;
        let out = self.out.as_ref().ok_or(Error::Cancelled)?;
        match &self.side {
            Side::Server { headers, budget, .. } => {
                // The response's headers are what the handler set before its first reply.
                headers.get();
                let share = match budget.try_take(content.len()) {
                    Some(share) => share,
                    None => tokio::select! {
                        share = budget.take(content.len()) => share,
                        () = out.closed() => return Err(Error::Cancelled),
                    },
                };
                let outgoing = Outgoing {
                    content,
                    _share: share,
                };
                out.send(outgoing).await.map_err(|_| Error::Cancelled)
            }
            Side::Client { deadline: None, .. } => {
                out.send(unbudgeted(content)).await.map_err(|_| Error::Cancelled)
            }
            // Past the deadline nothing goes, even with room in the channel (as on fRPC).
            Side::Client {
                deadline: Some((at, limit)),
                ..
            } if Instant::now() >= *at => Err(Error::Timeout(*limit)),
            Side::Client {
                deadline: Some((at, limit)),
                ..
            } => match tokio::time::timeout_at(*at, out.send(unbudgeted(content))).await {
                Ok(sent) => sent.map_err(|_| Error::Cancelled),
                Err(_) => Err(Error::Timeout(*limit)),
            },
        }
    }
}

/// A client's request, outside any budget.
fn unbudgeted(content: Bytes) -> Outgoing {
    Outgoing {
        content,
        _share: None,
    }
}

/// The handler's halves of a bridged stream.
pub(super) fn split<Req: Message, Resp: Message>(
    bridge: Bridge,
) -> (BridgedStreaming<Req>, BridgedSender<Resp>) {
    let sender = BridgedSender::new(&bridge);
    (BridgedStreaming::new(bridge.source, bridge.limits, true), sender)
}

#[cfg(all(test, feature = "grpc"))]
mod tests {
    use std::task::Waker;

    use super::*;
    use crate::health::HealthCheckRequest as Msg;

    /// A server's bridged sender with a reply budget of `bytes`, and its channel's far end.
    fn server_sender(bytes: usize) -> (BridgedSender<Msg>, mpsc::Receiver<Outgoing>) {
        let (replies, rx) = mpsc::channel(16);
        let state = Arc::new(CallState::with(None, Metadata::new()));
        let bridge = Bridge {
            source: Box::pin(futures_util::stream::empty()),
            limits: DecodeLimits::default(),
            replies,
            reply_bytes: ByteBudget::new(bytes),
            draining: CancellationToken::new(),
            headers: Arc::new(Headers::new(state)),
        };
        (BridgedSender::new(&bridge), rx)
    }

    fn is_pending<F: Future>(future: Pin<&mut F>) -> bool {
        future
            .poll(&mut TaskContext::from_waker(Waker::noop()))
            .is_pending()
    }

    /// Replies the other protocol has not taken hold the handler back by bytes, not only by
    /// the channel's 16 messages: 16 unread replies of 4 MB each were held for one stream.
    #[tokio::test]
    async fn replies_not_taken_hold_the_sender_back_by_bytes() {
        let (sender, mut rx) = server_sender(100);
        sender.send(Ok(Bytes::from(vec![1; 60]))).await.unwrap();
        let mut second = std::pin::pin!(sender.send(Ok(Bytes::from(vec![2; 60]))));
        assert!(
            is_pending(second.as_mut()),
            "60 + 60 bytes are over the budget of 100"
        );
        assert_eq!(rx.recv().await.unwrap().content.len(), 60);
        second.await.unwrap();
        // A reply larger than the budget goes alone, once the channel holds no bytes.
        let mut large = std::pin::pin!(sender.send(Ok(Bytes::from(vec![3; 1000]))));
        assert!(is_pending(large.as_mut()));
        drop(rx.recv().await.unwrap());
        large.await.unwrap();
        assert_eq!(rx.recv().await.unwrap().content.len(), 1000);
    }

    /// A sender waiting for room fails once the other end is gone, as a full channel's does.
    #[tokio::test]
    async fn a_sender_waiting_for_bytes_fails_when_the_stream_is_gone() {
        let (sender, rx) = server_sender(10);
        sender.send(Ok(Bytes::from(vec![1; 10]))).await.unwrap();
        let mut waiting = std::pin::pin!(sender.send(Ok(Bytes::from(vec![2; 10]))));
        assert!(is_pending(waiting.as_mut()));
        drop(rx);
        assert!(matches!(waiting.await, Err(Error::Cancelled)));
    }
}
