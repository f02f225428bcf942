//! [`PrefaceDeadline`]: a gRPC connection whose client has not sent the HTTP/2 preface within
//! the idle timeout fails its reads, so hyper drops it. hyper waits for the preface without a
//! timer of its own: a peer that sent one byte (`P`, which routes it to the gRPC face) and
//! then nothing held its connection, and its place in `max_connections`, for ever.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The HTTP/2 client preface's length (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`).
const PREFACE_LEN: usize = 24;

/// An I/O whose reads fail with `TimedOut` if the first [`PREFACE_LEN`] bytes have not all
/// arrived by the deadline; after them it is the I/O itself (one branch per read).
pub(crate) struct PrefaceDeadline<T> {
    io: T,
    /// `None` once the preface is in.
    deadline: Option<(Pin<Box<Sleep>>, usize)>,
}

impl<T> PrefaceDeadline<T> {
    pub(crate) fn new(io: T, patience: Duration) -> PrefaceDeadline<T> {
        let deadline = Box::pin(tokio::time::sleep(patience));
        PrefaceDeadline {
            io,
            deadline: Some((deadline, 0)),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for PrefaceDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        let Some((deadline, got)) = &mut this.deadline else {
            return read;
        };
        if let Poll::Ready(Ok(())) = &read {
            *got += buf.filled().len() - before;
            if *got >= PREFACE_LEN {
                this.deadline = None;
            }
            return read;
        }
        match (read, deadline.as_mut().poll(cx)) {
            (Poll::Pending, Poll::Ready(())) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no HTTP/2 preface within the idle timeout",
            ))),
            (read, _) => read,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for PrefaceDeadline<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_preface_that_never_comes_fails_the_read() {
        let (mut peer, io) = tokio::io::duplex(64);
        let mut io = PrefaceDeadline::new(io, Duration::from_secs(5));
        peer.write_all(b"P").await.unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(io.read(&mut buf).await.unwrap(), 1);
        let err = io.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_preface_the_deadline_is_gone() {
        let (mut peer, io) = tokio::io::duplex(64);
        let mut io = PrefaceDeadline::new(io, Duration::from_secs(5));
        peer.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 64];
        let mut got = 0;
        while got < PREFACE_LEN {
            got += io.read(&mut buf).await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        peer.write_all(b"late").await.unwrap();
        assert_eq!(io.read(&mut buf).await.unwrap(), 4);
    }
}
