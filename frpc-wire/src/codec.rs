//! A tokio-util [`Decoder`]/[`Encoder`] that turns a byte stream into [`Packet`]s and back.

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::FrameError;
use crate::header::{DEFAULT_MAX_CONTENT_LENGTH, Framing, Header};
use crate::packet::Packet;

/// Frames [`Packet`]s in one [`Framing`], enforcing a maximum content length both ways.
///
/// Decoded content is split off the read buffer, so it is a zero-copy [`bytes::Bytes`] slice.
/// A header announcing more than `max_content_length` is refused before any of its content is
/// buffered, so a hostile length never makes us allocate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketCodec {
    framing: Framing,
    max_content_length: u32,
}

impl Default for PacketCodec {
    /// Frisbee v0.11 framing with Go's 5 MiB limit.
    fn default() -> Self {
        PacketCodec::new(Framing::default())
    }
}

impl PacketCodec {
    /// A codec for `framing` with the default limit of [`DEFAULT_MAX_CONTENT_LENGTH`] bytes.
    pub fn new(framing: Framing) -> PacketCodec {
        PacketCodec {
            framing,
            max_content_length: DEFAULT_MAX_CONTENT_LENGTH,
        }
    }

    /// Sets the largest content accepted and sent. `u32::MAX` turns the check off (Go's 0).
    pub fn with_max_content_length(mut self, max: u32) -> PacketCodec {
        self.max_content_length = max;
        self
    }

    /// The framing this codec speaks.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The largest content length accepted and sent.
    pub fn max_content_length(&self) -> u32 {
        self.max_content_length
    }

    /// Checks a content length against the limit.
    pub fn check_len(&self, len: usize) -> Result<u32, FrameError> {
        match u32::try_from(len) {
            Ok(len) if len <= self.max_content_length => Ok(len),
            _ => Err(FrameError::ContentTooLarge {
                len: len as u64,
                max: self.max_content_length,
            }),
        }
    }

    /// Writes the header for `id`, `op` and `len` content bytes.
    pub fn encode_header(
        &self,
        id: u16,
        op: u16,
        len: usize,
        dst: &mut impl BufMut,
    ) -> Result<(), FrameError> {
        let len = self.check_len(len)?;
        Header { id, op, len }.encode(self.framing, dst);
        Ok(())
    }
}

impl Decoder for PacketCodec {
    type Item = Packet;
    type Error = FrameError;

    /// Nothing is consumed until a whole packet is buffered, so whatever is left in `src`
    /// is exactly the bytes not yet parsed (what connection takeover hands back).
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Packet>, FrameError> {
        let Some(header) = Header::parse(self.framing, src)? else {
            return Ok(None);
        };
        if header.len > self.max_content_length {
            return Err(FrameError::ContentTooLarge {
                len: header.len.into(),
                max: self.max_content_length,
            });
        }
        let total = self.framing.header_len() + header.len as usize;
        if src.len() < total {
            // Bounded by the limit checked above.
            src.reserve(total - src.len());
            return Ok(None);
        }
        src.advance(self.framing.header_len());
        Ok(Some(Packet {
            id: header.id,
            op: header.op,
            content: src.split_to(header.len as usize).freeze(),
        }))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Packet>, FrameError> {
        match self.decode(src)? {
            Some(packet) => Ok(Some(packet)),
            None if src.is_empty() => Ok(None),
            None => Err(FrameError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("connection closed inside a packet ({} bytes unparsed)", src.len()),
            ))),
        }
    }
}

impl Encoder<Packet> for PacketCodec {
    type Error = FrameError;

    fn encode(&mut self, packet: Packet, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.encode(&packet, dst)
    }
}

impl Encoder<&Packet> for PacketCodec {
    type Error = FrameError;

    fn encode(&mut self, packet: &Packet, dst: &mut BytesMut) -> Result<(), FrameError> {
        let content = &packet.content;
        dst.reserve(self.framing.header_len() + content.len());
        self.encode_header(packet.id, packet.op, content.len(), dst)?;
        dst.put_slice(content);
        Ok(())
    }
}
