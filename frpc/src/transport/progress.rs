//! The write half of the socket, watched: whether the peer takes what this side writes. A peer
//! that takes nothing while output waits (it stopped reading, or vanished) is as good as gone,
//! whatever it still sends: the heartbeat closes its connection after the idle timeout, as Go's
//! frisbee fails a flush that waits past its deadline. Without it, a peer that pinged but never
//! read kept a client's CANCELs and calls waiting for ever, and a vanished one kept a server's
//! reader waiting for room its handlers could never make.

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

/// What the heartbeat reads of the writes.
#[derive(Debug, Default)]
pub(crate) struct WriteProgress {
    /// Set whenever the socket takes bytes.
    wrote: AtomicBool,
    /// Set when a write found the socket full, cleared when one goes through: output waits.
    blocked: AtomicBool,
}

impl WriteProgress {
    /// Whether output waited for the peer since the last look, and none of it went: the peer
    /// takes nothing. Clears what it read of the progress.
    pub(crate) fn stuck(&self) -> bool {
        !self.wrote.swap(false, Ordering::Relaxed) && self.blocked.load(Ordering::Relaxed)
    }

    /// Whether the last write found the socket full.
    #[cfg(test)]
    pub(crate) fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::Relaxed)
    }

    fn note(&self, poll: &Poll<std::io::Result<usize>>) {
        match poll {
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.wrote.store(true, Ordering::Relaxed);
                self.blocked.store(false, Ordering::Relaxed);
            }
            Poll::Pending => self.blocked.store(true, Ordering::Relaxed),
            Poll::Ready(_) => {}
        }
    }
}

/// A write half that notes its progress in a [`WriteProgress`].
#[derive(Debug)]
pub(crate) struct Watched<W> {
    inner: W,
    progress: Arc<WriteProgress>,
}

impl<W> Watched<W> {
    pub(crate) fn new(inner: W, progress: Arc<WriteProgress>) -> Watched<W> {
        Watched { inner, progress }
    }

    /// The write half itself (a takeover hands it back).
    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Watched<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progress.note(&poll);
        poll
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progress.note(&poll);
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        // A flush waiting (TLS's buffered records) is output waiting too.
        if poll.is_pending() {
            this.progress.blocked.store(true, Ordering::Relaxed);
        }
        poll
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
