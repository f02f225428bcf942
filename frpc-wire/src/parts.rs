//! A content built as a short chain of shared slices: what an encoder writes goes into a
//! buffer, while large values already held as [`Bytes`] are referenced where they are (a
//! reference count, no copy). A writer sends the chain with one vectored write, so a 1 MiB
//! `bytes` field goes from its own buffer to the socket.
//!
//! The bytes of the chain, one slice after another, are exactly the encoding into one buffer:
//! nothing on the wire changes.

use crate::copy;
use bytes::{Bytes, BytesMut};

/// Values at least this long are spliced in by reference rather than copied (a smaller value
/// costs less to copy than one more slice costs to write).
pub const SPLICE_MIN: usize = 32 * 1024;

/// An encoding under way whose large values are kept as their own slices.
///
/// Write into its buffer ([`Parts::buf_mut`]) as into any [`BufMut`](bytes::BufMut); [`Parts::splice`] appends a shared slice without
/// copying it. [`Parts::into_bytes`] gives the whole content in one buffer (copying when there
/// is more than one part), [`Parts::into_vec`] the chain.
#[derive(Debug, Default)]
pub struct Parts {
    /// The finished parts, in order.
    done: Vec<Bytes>,
    /// What is being written after them.
    buf: BytesMut,
    /// The length of `done`'s parts together.
    done_len: usize,
}

impl Parts {
    /// An empty chain whose buffer starts with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Parts {
        Parts {
            done: Vec::new(),
            buf: BytesMut::with_capacity(capacity),
            done_len: 0,
        }
    }

    /// The buffer being written, behind the finished parts: what is put there follows them.
    #[inline]
    pub fn buf_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Appends `bytes` as a part of its own (a reference, not a copy).
    pub fn splice(&mut self, bytes: Bytes) {
        if bytes.is_empty() {
            return;
        }
        self.finish_buf();
        self.done_len += bytes.len();
        self.done.push(bytes);
    }

    /// Appends `bytes`: spliced when at least [`SPLICE_MIN`] long, copied otherwise.
    pub fn put_shared(&mut self, bytes: &Bytes) {
        match bytes.len() >= SPLICE_MIN {
            true => self.splice(bytes.clone()),
            false => copy::put_slice(&mut self.buf, bytes),
        }
    }

    /// Appends `bytes`, given up: spliced when at least [`SPLICE_MIN`] long, copied otherwise.
    pub fn put_owned(&mut self, bytes: Bytes) {
        match bytes.len() >= SPLICE_MIN {
            true => self.splice(bytes),
            false => copy::put_slice(&mut self.buf, &bytes),
        }
    }

    /// Appends `bytes` (a `String`'s or a `Vec`'s buffer), given up: its own buffer becomes a
    /// part when at least [`SPLICE_MIN`] long (no copy), copied otherwise (no allocation).
    pub fn put_vec(&mut self, bytes: Vec<u8>) {
        match bytes.len() >= SPLICE_MIN {
            true => self.splice(Bytes::from(bytes)),
            false => copy::put_slice(&mut self.buf, &bytes),
        }
    }

    /// The length of the whole content.
    pub fn len(&self) -> usize {
        self.done_len + self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many parts the content is in.
    pub fn count(&self) -> usize {
        self.done.len() + usize::from(!self.buf.is_empty())
    }

    /// The parts, in order (none empty).
    pub fn into_vec(mut self) -> Vec<Bytes> {
        self.finish_buf();
        self.done
    }

    /// The whole content in one buffer: the only part as it is, or the parts copied together.
    pub fn into_bytes(mut self) -> Bytes {
        if self.done.is_empty() {
            return self.buf.freeze();
        }
        self.finish_buf();
        if self.done.len() == 1 {
            return self.done.pop().unwrap_or_default();
        }
        let mut whole = BytesMut::with_capacity(self.done_len);
        for part in &self.done {
            copy::put_slice(&mut whole, part);
        }
        whole.freeze()
    }

    /// Moves what the buffer holds into the finished parts.
    fn finish_buf(&mut self) {
        if !self.buf.is_empty() {
            let part = self.buf.split().freeze();
            self.done_len += part.len();
            self.done.push(part);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    #[test]
    fn parts_concatenate_to_what_was_written() {
        let big = Bytes::from(vec![7u8; SPLICE_MIN]);
        let small = Bytes::from_static(b"tiny");
        let mut parts = Parts::with_capacity(4);
        parts.buf_mut().put_slice(b"head");
        parts.put_shared(&big);
        parts.put_shared(&small);
        parts.buf_mut().put_u8(9);
        parts.put_shared(&big);
        assert_eq!(parts.len(), 4 + 2 * SPLICE_MIN + 4 + 1);
        assert_eq!(parts.count(), 4);
        let mut whole = Vec::new();
        whole.extend_from_slice(b"head");
        whole.extend_from_slice(&big);
        whole.extend_from_slice(b"tiny\x09");
        whole.extend_from_slice(&big);
        let chain = {
            let mut again = Parts::default();
            again.buf_mut().put_slice(b"head");
            again.put_shared(&big);
            again.buf_mut().put_slice(b"tiny\x09");
            again.put_shared(&big);
            again.into_vec()
        };
        assert_eq!(chain.len(), 4);
        assert_eq!(chain[1].as_ptr(), big.as_ptr(), "spliced, not copied");
        assert_eq!(chain.concat(), whole);
        assert_eq!(parts.into_bytes(), whole);
    }

    #[test]
    fn one_part_is_not_copied() {
        let big = Bytes::from(vec![1u8; SPLICE_MIN + 1]);
        let mut parts = Parts::default();
        parts.put_shared(&big);
        assert_eq!(parts.count(), 1);
        assert_eq!(parts.into_bytes().as_ptr(), big.as_ptr());
        let mut parts = Parts::default();
        parts.splice(Bytes::new());
        assert!(parts.is_empty());
        assert_eq!(parts.count(), 0);
        assert!(parts.into_vec().is_empty());
    }
}
