//! Bridged streams: a streaming call another protocol carries (the gRPC face) served by the
//! same handler as an fRPC stream. The handler's [`Streaming`](super::Streaming) reads the
//! request contents a [`Source`] yields, its [`StreamSender`](super::StreamSender) hands
//! reply contents to a channel the other protocol drains; both in the gRPC face's encoding
//! ([`codec::Encoding::Grpc`]: a request is the bare protobuf message, a reply its gRPC message
//! frame, so neither is copied on the way). No stream table, credit or packets: the other protocol has
//! its own flow control (HTTP/2's windows reach the handler through the channel's bound and
//! the source's polling), and it ends the stream with the handler's outcome.

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll, ready};

use bytes::Bytes;
use frpc_wire::polyglot::{Envelope, Message};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::calls::codec;
use crate::calls::ext::CallState;
use crate::config::DecodeLimits;
use crate::metadata::Metadata;
use crate::status::{Error, Status};

/// The request contents of a bridged stream, each a bare protobuf message; a status
/// ends the stream abnormally (the request was cut off, or over the size limit).
pub(crate) type Source = Pin<Box<dyn futures_core::Stream<Item = Result<Bytes, Status>> + Send>>;

/// What a bridged [`ServerStream`](super::ServerStream) is made of, until its handler splits it.
pub(crate) struct Bridge {
    /// The request contents.
    pub(crate) source: Source,
    /// What decoding them may cost.
    pub(crate) limits: DecodeLimits,
    /// Where the reply contents go.
    pub(crate) replies: mpsc::Sender<Bytes>,
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
    pub(super) fn new(source: Source, limits: DecodeLimits) -> BridgedStreaming<T> {
        BridgedStreaming {
            source: Mutex::new(source),
            limits,
            done: false,
            _message: PhantomData,
        }
    }

    /// The next request: `Ok(None)` at the end, the source's status once it failed, and
    /// [`Error::InvalidMessage`] (the client's bad argument) for one that does not decode.
    pub(super) fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        let source = self.source.get_mut().unwrap_or_else(|e| e.into_inner());
        let content = match ready!(source.as_mut().poll_next(cx)) {
            Some(Ok(content)) => content,
            Some(Err(status)) => {
                self.done = true;
                return Poll::Ready(Err(Error::Status(status)));
            }
            None => {
                self.done = true;
                return Poll::Ready(Ok(None));
            }
        };
        Poll::Ready(match codec::decode_protobuf::<T>(content, self.limits) {
            Ok(Envelope::Message(message)) => Ok(Some(message)),
            Ok(Envelope::Error(text)) => {
                Err(Error::InvalidMessage(format!("unexpected error message: {text}")))
            }
            Err(err) => Err(Error::InvalidMessage(err.to_string())),
        })
    }
}

/// The outbound half of a bridged stream. Cheap to clone.
pub(crate) struct BridgedSender<T> {
    replies: mpsc::Sender<Bytes>,
    draining: CancellationToken,
    headers: Arc<Headers>,
    _message: PhantomData<fn(T)>,
}

impl<T> Clone for BridgedSender<T> {
    fn clone(&self) -> Self {
        BridgedSender {
            replies: self.replies.clone(),
            draining: self.draining.clone(),
            headers: self.headers.clone(),
            _message: PhantomData,
        }
    }
}

impl<T> fmt::Debug for BridgedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamSender").field("bridged", &true).finish()
    }
}

impl<T: Message> BridgedSender<T> {
    pub(super) fn new(bridge: &Bridge) -> BridgedSender<T> {
        BridgedSender {
            replies: bridge.replies.clone(),
            draining: bridge.draining.clone(),
            headers: bridge.headers.clone(),
            _message: PhantomData,
        }
    }

    /// One reply as a gRPC message frame, to [`send`](Self::send). Fails with [`Error::ShuttingDown`]
    /// once the server began shutting down, unless `stream` is off (a client-streaming
    /// call's one reply goes out during a shutdown, as a unary reply does).
    pub(super) fn encode(&self, message: &T, stream: bool) -> Result<Bytes, Error> {
        match stream && self.draining.is_cancelled() {
            true => Err(Error::ShuttingDown),
            false => Ok(codec::encode_as(message, codec::Encoding::Grpc)),
        }
    }

    /// Sends one encoded reply, waiting while the channel is full (the client reads slower
    /// than the handler sends); fails with [`Error::Cancelled`] once the call is over (the
    /// client went, or the handler returned).
    pub(super) async fn send(&self, content: Result<Bytes, Error>) -> Result<(), Error> {
        let content = content?;
        // The response's headers are what the handler set before its first reply.
        self.headers.get();
        self.replies.send(content).await.map_err(|_| Error::Cancelled)
    }
}

/// The handler's halves of a bridged stream.
pub(super) fn split<Req: Message, Resp: Message>(
    bridge: Bridge,
) -> (BridgedStreaming<Req>, BridgedSender<Resp>) {
    let sender = BridgedSender::new(&bridge);
    (BridgedStreaming::new(bridge.source, bridge.limits), sender)
}
