//! The reader's input: the read half of the socket, the bytes read from it, and the frames cut
//! from them. What `tokio_util`'s `FramedRead` did for the reader, without its general state
//! machine and stream layer on every packet: a frame already read is cut without a poll
//! ([`FrameReader::buffered`]), and a takeover gets the read half back with the bytes read but
//! not parsed ([`FrameReader::into_parts`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use frpc_wire::{Frame, FrameCodec, FrameError};
use tokio::io::AsyncRead;
use tokio_util::codec::Decoder;
use tokio_util::io::poll_read_buf;

/// Frames read from `R`, one at a time.
pub(crate) struct FrameReader<R> {
    io: R,
    /// Bytes read and not yet cut into frames.
    buffer: BytesMut,
    frames: FrameCodec,
    /// Set whenever bytes arrive, never while the socket is quiet: a slow but moving transfer
    /// (a large packet on a slow link) never trips the idle timeout, a silent peer does.
    activity: Arc<AtomicBool>,
    /// Whether bytes arrived since the codec last found no whole frame in the buffer: only
    /// then can it find one (a cut packet is not parsed again and again while the rest is
    /// on its way).
    readable: bool,
    /// The peer closed its side: what is buffered is all there will be.
    eof: bool,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader of `io` cutting frames with `frames`, its buffer `capacity` bytes to start
    /// with; `activity` is set whenever bytes arrive.
    pub(crate) fn new(io: R, frames: FrameCodec, activity: Arc<AtomicBool>, capacity: usize) -> Self {
        FrameReader {
            io,
            buffer: BytesMut::with_capacity(capacity),
            frames,
            activity,
            readable: false,
            eof: false,
        }
    }

    /// A whole frame already read (pipelined packets), cut without touching the socket.
    /// `Ok(None)`: none is buffered (nothing, or part of a packet).
    #[inline]
    pub(crate) fn buffered(&mut self) -> Result<Option<Frame>, FrameError> {
        if !self.readable || self.buffer.is_empty() {
            return Ok(None);
        }
        let frame = self.frames.decode(&mut self.buffer)?;
        self.readable = frame.is_some();
        Ok(frame)
    }

    /// Whether bytes are buffered that are not yet cut into frames (the next packet, or part
    /// of it, is already here).
    pub(crate) fn has_unread(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// The next frame, read from the socket when none is buffered. `None`: the peer closed the
    /// connection after a whole frame; closing it inside one is an error.
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame, FrameError>>> {
        loop {
            if let Some(frame) = self.buffered().transpose() {
                return Poll::Ready(Some(frame));
            }
            if self.eof {
                return Poll::Ready(self.frames.decode_eof(&mut self.buffer).transpose());
            }
            // Room for one byte at least: a read into no room would look like the end.
            self.buffer.reserve(1);
            match ready!(poll_read_buf(Pin::new(&mut self.io), cx, &mut self.buffer)) {
                Ok(0) => self.eof = true,
                Ok(_) => {
                    self.readable = true;
                    self.activity.store(true, Ordering::Relaxed);
                }
                Err(err) => return Poll::Ready(Some(Err(err.into()))),
            }
        }
    }

    /// The next frame: [`FrameReader::poll_frame`] as a future.
    pub(crate) fn next_frame(&mut self) -> impl Future<Output = Option<Result<Frame, FrameError>>> + '_ {
        std::future::poll_fn(|cx| self.poll_frame(cx))
    }

    /// The read half and the bytes read but not yet parsed (what a takeover hands on).
    pub(crate) fn into_parts(self) -> (R, BytesMut) {
        (self.io, self.buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use frpc_wire::{Framing, Header, PacketCodec};
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};

    /// A connected pair of real sockets: (the peer's end, the reader's end).
    async fn sockets() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (ours, _) = listener.accept().await.unwrap();
        (peer, ours)
    }

    fn packet(id: u16, content: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        let header = Header {
            id,
            op: 10,
            len: content.len() as u32,
        };
        header.encode(Framing::Frisbee, &mut out);
        out.put_slice(content);
        out.to_vec()
    }

    fn reader<R: AsyncRead + Unpin>(io: R, max_content: u32) -> (FrameReader<R>, Arc<AtomicBool>) {
        let codec = PacketCodec::new(Framing::Frisbee).with_max_content_length(max_content);
        let activity = Arc::new(AtomicBool::new(false));
        (
            FrameReader::new(io, FrameCodec::new(codec), activity.clone(), 64),
            activity,
        )
    }

    fn id(frame: Option<Result<Frame, FrameError>>) -> u16 {
        match frame {
            Some(Ok(Frame::Packet(packet))) => packet.id,
            other => panic!("expected a packet, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn frames_cut_across_reads_come_whole_and_buffered_ones_need_no_read() {
        let (mut client, server) = sockets().await;
        let (mut frames, activity) = reader(server, 1024);
        let mut bytes = packet(1, b"first");
        bytes.extend(packet(2, b"second"));
        let third = packet(3, b"third, cut in two");
        bytes.extend(&third[..7]);
        client.write_all(&bytes).await.unwrap();

        assert!(frames.buffered().unwrap().is_none(), "nothing read yet");
        assert_eq!(id(frames.next_frame().await), 1);
        assert!(activity.load(Ordering::Relaxed), "bytes arrived");
        assert!(frames.has_unread());
        let second = frames.buffered().unwrap().expect("the second packet is buffered");
        assert!(matches!(second, Frame::Packet(packet) if packet.id == 2 && packet.content == "second"));
        assert!(
            frames.buffered().unwrap().is_none(),
            "only part of the third is here"
        );
        assert!(frames.has_unread());

        client.write_all(&third[7..]).await.unwrap();
        assert_eq!(id(frames.next_frame().await), 3);
        assert!(!frames.has_unread());
    }

    #[tokio::test]
    async fn the_end_after_a_whole_frame_is_none_and_inside_one_an_error() {
        let (mut client, server) = sockets().await;
        let (mut frames, _) = reader(server, 1024);
        client.write_all(&packet(1, b"whole")).await.unwrap();
        drop(client);
        assert_eq!(id(frames.next_frame().await), 1);
        assert!(frames.next_frame().await.is_none());
        assert!(frames.next_frame().await.is_none(), "the end stays the end");

        let (mut client, server) = sockets().await;
        let (mut frames, _) = reader(server, 1024);
        client.write_all(&packet(1, b"cut")[..10]).await.unwrap();
        drop(client);
        match frames.next_frame().await {
            Some(Err(FrameError::Io(err))) => {
                assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
                assert!(err.to_string().contains("inside a packet"), "{err}");
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_oversize_packet_is_named_and_skipped_and_the_next_one_read() {
        let (mut client, server) = sockets().await;
        let (mut frames, _) = reader(server, 8);
        let large = vec![7u8; 300];
        let writer = tokio::spawn(async move {
            client.write_all(&packet(1, &large)).await.unwrap();
            client.write_all(&packet(2, b"small")).await.unwrap();
        });
        match frames.next_frame().await {
            Some(Ok(Frame::Oversize(header))) => assert_eq!((header.id, header.len), (1, 300)),
            other => panic!("expected the oversize header, got {other:?}"),
        }
        assert_eq!(id(frames.next_frame().await), 2);
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn into_parts_hands_back_the_bytes_not_yet_parsed() {
        let (mut client, server) = sockets().await;
        let (mut frames, _) = reader(server, 1024);
        let mut bytes = packet(1, b"parsed");
        let rest = packet(2, b"not parsed");
        bytes.extend(&rest);
        client.write_all(&bytes).await.unwrap();
        assert_eq!(id(frames.next_frame().await), 1);
        let (_io, unparsed) = frames.into_parts();
        assert_eq!(&unparsed[..], &rest[..]);
    }
}
