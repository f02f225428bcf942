//! A gRPC call's response as the face sends it, without tonic's encoder: a handler's reply is
//! already gRPC's message frame ([`Encoding::Grpc`](crate::calls::codec::Encoding::Grpc)), so it
//! goes out as the handler's own `Bytes` (h2 sends a large buffer from where it lies, where
//! tonic's `EncodeBody` would first copy it into a buffer of its own). The bytes on the wire are
//! tonic's: the same headers, the same DATA (small replies that are ready together are gathered
//! into one buffer up to 32 KiB, as tonic's encoder gathers them), the status in the trailers.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use futures_core::Stream;
use http::HeaderMap;
use http::header::{CONTENT_TYPE, HeaderValue};
use hyper::body::{Body, Frame};

use crate::calls::codec::{GRPC_PREFIX, MARKER, grpc_message};

use super::stream::Replies;

/// Where gathered replies go out (tonic's yield threshold).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// Headers a handler's metadata may not set: gRPC's own (tonic leaves them out too).
const RESERVED: [&str; 5] = [
    "te",
    "content-type",
    "grpc-message",
    "grpc-message-type",
    "grpc-status",
];

/// The HTTP response of a call that answers with a body: the handler's metadata and
/// `content-type: application/grpc` in the headers, its replies, its status in the trailers.
pub(super) fn response(
    response: tonic::Response<Replies>,
    max_encoding: usize,
) -> http::Response<tonic::body::Body> {
    let (metadata, replies, extensions) = response.into_parts();
    let mut headers = metadata.into_headers();
    for name in RESERVED {
        headers.remove(name);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    let mut response = http::Response::new(tonic::body::Body::new(ReplyBody::new(replies, max_encoding)));
    *response.headers_mut() = headers;
    *response.extensions_mut() = extensions;
    response
}

/// Requests come uncompressed (the face enables no compression): a compressed one is
/// `UNIMPLEMENTED`, with `grpc-accept-encoding: identity`, as tonic's server answers it.
pub(super) fn uncompressed(headers: &HeaderMap) -> Result<(), tonic::Status> {
    let Some(encoding) = headers.get("grpc-encoding") else {
        return Ok(());
    };
    if encoding.as_bytes() == b"identity" {
        return Ok(());
    }
    let name = match encoding.to_str() {
        Ok(name) => name.to_owned(),
        Err(_) => format!("{:?}", encoding.as_bytes()),
    };
    let mut status = tonic::Status::unimplemented(format!(
        "Content is compressed with `{name}` which isn't supported"
    ));
    status.metadata_mut().insert(
        "grpc-accept-encoding",
        tonic::metadata::AsciiMetadataValue::from_static("identity"),
    );
    Err(status)
}

/// The protobuf message of a reply: a gRPC message frame's, or an fRPC protobuf reply's (the
/// marker, then the message: what a layer may answer with).
pub(super) fn reply_message(reply: &Bytes) -> Option<Bytes> {
    grpc_message(reply).or_else(|| (reply.first() == Some(&MARKER)).then(|| reply.slice(1..)))
}

/// The response body: the replies as DATA, then the trailers.
struct ReplyBody {
    replies: Replies,
    max_encoding: usize,
    /// A reply not sent yet, kept as it is: it goes out uncopied unless another is ready
    /// behind it (then both are gathered into `gathered`).
    held: Option<Bytes>,
    gathered: BytesMut,
    /// The replies ended: what is gathered goes, then the trailers.
    ended: bool,
    /// A failure that ends the body once what was gathered before it is sent.
    failed: Option<tonic::Status>,
    /// The trailers went.
    done: bool,
}

impl ReplyBody {
    fn new(replies: Replies, max_encoding: usize) -> ReplyBody {
        ReplyBody {
            replies,
            max_encoding,
            held: None,
            gathered: BytesMut::new(),
            ended: false,
            failed: None,
            done: false,
        }
    }

    /// A reply as the frame to send: a gRPC frame as it is, an fRPC protobuf reply reframed
    /// (copied), within the size limit (tonic's `OUT_OF_RANGE`).
    fn frame(&self, reply: Bytes) -> Result<Bytes, tonic::Status> {
        let frame = match grpc_message(&reply) {
            Some(_) => reply,
            None => reframe(&reply)?,
        };
        let (len, limit) = (frame.len() - GRPC_PREFIX, self.max_encoding);
        if len > limit {
            return Err(tonic::Status::out_of_range(format!(
                "Error, encoded message length too large: found {len} bytes, the limit is: {limit} bytes"
            )));
        }
        Ok(frame)
    }

    /// Adds a frame to what goes out next: kept whole if it is the only one, else copied
    /// behind the others.
    fn gather(&mut self, frame: Bytes) {
        if self.held.is_none() && self.gathered.is_empty() {
            self.held = Some(frame);
            return;
        }
        if let Some(held) = self.held.take() {
            self.gathered.extend_from_slice(&held);
        }
        self.gathered.extend_from_slice(&frame);
    }

    fn pending_len(&self) -> usize {
        self.held.as_ref().map_or(self.gathered.len(), Bytes::len)
    }

    /// What was gathered, as one DATA frame.
    fn data(&mut self) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let data = self.held.take().unwrap_or_else(|| self.gathered.split().freeze());
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    /// Ends the body with `status` (`None`: OK) once what was gathered is out.
    fn finish(&mut self, status: Option<tonic::Status>) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        if self.pending_len() > 0 {
            self.failed = status;
            self.ended = true;
            return self.data();
        }
        self.done = true;
        let status = status.unwrap_or_else(|| tonic::Status::ok(""));
        let mut trailers = HeaderMap::new();
        Poll::Ready(Some(match status.add_header(&mut trailers) {
            Ok(()) => Ok(Frame::trailers(trailers)),
            Err(status) => Err(status),
        }))
    }
}

/// An fRPC protobuf reply (the marker, then the message) as a gRPC message frame.
fn reframe(reply: &[u8]) -> Result<Bytes, tonic::Status> {
    let Some((&MARKER, message)) = reply.split_first() else {
        return Err(tonic::Status::internal("the handler's reply is not protobuf"));
    };
    let len = u32::try_from(message.len()).map_err(|_| {
        tonic::Status::resource_exhausted(format!(
            "Cannot return body with more than 4GB of data but got {} bytes",
            message.len()
        ))
    })?;
    let mut frame = BytesMut::with_capacity(GRPC_PREFIX + message.len());
    frame.put_u8(0);
    frame.put_u32(len);
    frame.put_slice(message);
    Ok(frame.freeze())
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.ended {
            let failed = this.failed.take();
            return this.finish(failed);
        }
        loop {
            match Pin::new(&mut this.replies).poll_next(cx) {
                Poll::Ready(Some(Ok(reply))) => match this.frame(reply) {
                    Ok(frame) => {
                        let frame = this.replies.carry_place(frame);
                        this.gather(frame)
                    }
                    Err(status) => return this.finish(Some(status)),
                },
                Poll::Ready(Some(Err(status))) => return this.finish(Some(status)),
                Poll::Ready(None) => return this.finish(None),
                Poll::Pending if this.pending_len() == 0 => return Poll::Pending,
                Poll::Pending => return this.data(),
            }
            if this.pending_len() >= YIELD_THRESHOLD {
                return this.data();
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frpc_protobuf_replies_are_reframed_and_the_rest_refused() {
        let frame = reframe(b"\xfd\x08\x01").unwrap();
        assert_eq!(&frame[..], b"\x00\x00\x00\x00\x02\x08\x01");
        assert_eq!(&reply_message(&frame).unwrap()[..], b"\x08\x01");
        assert_eq!(
            &reply_message(&Bytes::from_static(b"\xfd\x08\x01")).unwrap()[..],
            b"\x08\x01"
        );
        assert_eq!(reframe(b"\x00\x01").unwrap_err().code(), tonic::Code::Internal);
        // A frame whose length does not add up is no frame.
        assert!(reply_message(&Bytes::from_static(b"\x00\x00\x00\x00\x03\x08\x01")).is_none());
    }

    #[test]
    fn compressed_requests_are_unimplemented() {
        let mut headers = HeaderMap::new();
        assert!(uncompressed(&headers).is_ok());
        headers.insert("grpc-encoding", HeaderValue::from_static("identity"));
        assert!(uncompressed(&headers).is_ok());
        headers.insert("grpc-encoding", HeaderValue::from_static("gzip"));
        let status = uncompressed(&headers).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        assert_eq!(status.metadata().get("grpc-accept-encoding").unwrap(), "identity");
    }
}
