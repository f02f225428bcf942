//! tokio-util [`Decoder`]/[`Encoder`]s that turn a byte stream into [`Packet`]s and back:
//! [`PacketCodec`], which fails on a packet over the content limit, and [`FrameCodec`], which
//! reports it as [`Frame::Oversize`], skips its content and carries on.

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::FrameError;
use crate::header::{DEFAULT_MAX_CONTENT_LENGTH, Framing, Header};
use crate::packet::Packet;

/// The most a decoder reserves in the read buffer at once for a packet still arriving. A peer's
/// announced length is only a claim: the buffer grows with the bytes that really arrive, so 400
/// connections announcing 5 MiB and sending one byte cost 400 × this, not 2 GiB.
pub const READ_RESERVE: usize = 64 * 1024;

/// How much room to make for a packet still arriving, `missing` bytes short with `buffered`
/// bytes in the buffer, from a peer whose largest whole packet so far took `proven` bytes:
/// never more than is missing, and never more than what arrived (or [`READ_RESERVE`], or
/// `proven`, whichever is largest). The announced length is only a claim, so the buffer grows
/// with the bytes that really came (its capacity stays within a few times them, plus
/// `READ_RESERVE`), and it grows geometrically whatever `BytesMut` does with a request (it
/// doubles a buffer it owns, but sizes a new one for a buffer still shared with a packet split
/// off earlier exactly as asked), so a large packet costs O(its size) in reallocation copies.
/// A packet no larger than one the peer already sent whole gets its room at once: the peer has
/// shown it sends packets that large, and growing would copy the packet once more (the
/// allocation of its predecessor is often still shared with that packet's reply, unfinished).
#[inline]
fn read_ahead(missing: usize, buffered: usize, proven: usize) -> usize {
    missing.min(buffered.max(READ_RESERVE).max(proven))
}

/// [`FrameCodec`]'s default [`max_skip`](FrameCodec::with_max_skip): 64 MiB.
pub const DEFAULT_MAX_SKIP: u32 = 64 * 1024 * 1024;

/// Frames [`Packet`]s in one [`Framing`], enforcing a maximum content length both ways.
///
/// Decoded content is split off the read buffer, so it is a zero-copy [`bytes::Bytes`] slice.
/// A header announcing more than `max_content_length` is refused before any of its content is
/// buffered, and one within it only makes the buffer grow as its bytes arrive (at most
/// about as much again as arrived), or at once up to the size of the largest packet the peer
/// already sent whole, so a hostile length never makes us allocate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketCodec {
    framing: Framing,
    max_content_length: u32,
    /// The largest packet (header included) decoded whole so far: room the peer has proven it
    /// fills (see [`read_ahead`]).
    proven: usize,
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
            proven: 0,
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

    /// A [`FrameCodec`] with this framing and content limit, which skips oversize packets.
    pub fn frames(self) -> FrameCodec {
        FrameCodec::new(self)
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

    /// [`Decoder::decode`] with the header at the front of `src` already parsed (by
    /// [`FrameCodec`], which looks at it first: parsed once, not twice).
    #[inline]
    fn decode_parsed(&mut self, header: Header, src: &mut BytesMut) -> Result<Option<Packet>, FrameError> {
        if header.len > self.max_content_length {
            return Err(FrameError::ContentTooLarge {
                len: header.len.into(),
                max: self.max_content_length,
            });
        }
        let total = self.framing.header_len() + header.len as usize;
        if src.len() < total {
            let missing = total - src.len();
            // Where the packet will not fit behind what is buffered, the allocation it shares
            // with packets split off earlier may still hold it once they are gone: then the few
            // bytes buffered move to its front now, rather than the whole packet later (a
            // large packet would otherwise cost a copy of itself, growing or moving). Only
            // while few bytes are buffered (later, moving them costs what growing does), and
            // never allocates: the allocation is one the peer's earlier packets filled.
            if src.len() <= READ_RESERVE && src.capacity() - src.len() < missing {
                let _ = src.try_reclaim(missing);
            }
            src.reserve(read_ahead(missing, src.len(), self.proven));
            return Ok(None);
        }
        self.proven = self.proven.max(total);
        // One split of the read buffer, then the header dropped from the shared slice (a
        // pointer's move), rather than two changes to the read buffer.
        let mut content = src.split_to(total).freeze();
        content.advance(self.framing.header_len());
        let large = total > READ_RESERVE;
        if large && src.is_empty() && src.capacity() > READ_RESERVE && src.capacity() < self.proven {
            // The room left behind this large packet is too small for the next one as large,
            // yet large enough that a read could fill it before the next header is seen: the
            // next packet would then be copied out of it whole once its header asks for more
            // room. Room for a packet as large as the peer has sent whole takes it without a
            // copy (the room left behind was about as large: the memory held stays the same).
            // Only after a large packet: small ones after it keep the room they find.
            *src = BytesMut::with_capacity(self.proven);
        }
        Ok(Some(Packet {
            id: header.id,
            op: header.op,
            content,
        }))
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
        self.decode_parsed(header, src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Packet>, FrameError> {
        match self.decode(src)? {
            Some(packet) => Ok(Some(packet)),
            None if src.is_empty() => Ok(None),
            None => Err(FrameError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed inside a packet ({} bytes unparsed{})",
                    src.len(),
                    hint(src)
                ),
            ))),
        }
    }
}

/// `; <what the bytes look like>` when the unparsed bytes a peer left are plainly not Frisbee
/// (HTTP, a TLS alert), else nothing.
fn hint(src: &[u8]) -> String {
    crate::error::looks_like(src).map_or_else(String::new, |hint| format!("; {hint}"))
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

/// What a [`FrameCodec`] reads: a packet, or the header of one too large to accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A packet within the content limit.
    Packet(Packet),
    /// A packet whose content exceeds the limit (but not `max_skip`). It is yielded as soon as
    /// its header is read; its `len` content bytes are then discarded as they arrive, never
    /// buffered, and decoding carries on with the next packet. The runtime can answer the
    /// request with an error instead of dropping the connection.
    Oversize(Header),
}

/// Like [`PacketCodec`], but a packet over the content limit is reported as
/// [`Frame::Oversize`] and skipped, keeping the connection, rather than being a fatal
/// [`FrameError::ContentTooLarge`].
///
/// Skipping is bounded by [`max_skip`](FrameCodec::with_max_skip) (default
/// [`DEFAULT_MAX_SKIP`]): a header announcing more is still `ContentTooLarge`. Reading and
/// dropping up to 4 GiB for one header is unbounded work for the peer's price of 10 bytes, and a
/// header that large usually means the stream is not framed as we think (a legacy header has no
/// magic to catch that), so the connection is better closed.
///
/// While content is being skipped, the bytes consumed from the read buffer are gone, so unlike
/// `PacketCodec` the buffer is not "exactly the bytes not yet parsed" until
/// [`skipping`](FrameCodec::skipping) is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameCodec {
    packets: PacketCodec,
    max_skip: u32,
    /// Content bytes of an oversize packet still to discard.
    skipping: u32,
}

impl Default for FrameCodec {
    /// [`PacketCodec::default`] skipping up to [`DEFAULT_MAX_SKIP`].
    fn default() -> Self {
        FrameCodec::new(PacketCodec::default())
    }
}

impl FrameCodec {
    /// Frames as `packets` does (framing, content limit), skipping oversize packets of up to
    /// [`DEFAULT_MAX_SKIP`] bytes.
    pub fn new(packets: PacketCodec) -> FrameCodec {
        FrameCodec {
            packets,
            max_skip: DEFAULT_MAX_SKIP,
            skipping: 0,
        }
    }

    /// Sets the largest oversize content that is skipped; above it the header is
    /// [`FrameError::ContentTooLarge`]. Values below the content limit are never reached.
    pub fn with_max_skip(mut self, max_skip: u32) -> FrameCodec {
        self.max_skip = max_skip;
        self
    }

    /// The largest oversize content that is skipped.
    pub fn max_skip(&self) -> u32 {
        self.max_skip
    }

    /// The underlying packet codec (framing and content limit).
    pub fn packet_codec(&self) -> &PacketCodec {
        &self.packets
    }

    /// Content bytes of an oversize packet still to be discarded (0 when none).
    pub fn skipping(&self) -> u32 {
        self.skipping
    }

    /// Discards up to `skipping` bytes from the front of `src`.
    fn skip(&mut self, src: &mut BytesMut) {
        let n = src.len().min(self.skipping as usize);
        src.advance(n);
        self.skipping -= n as u32; // n <= skipping, a u32
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = FrameError;

    // Inline, as the header's parse and `decode_parsed`: this runs once per packet, called from
    // the runtime's crate (see the note on `polyglot::Decoder`).
    #[inline]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if self.skipping > 0 {
            self.skip(src);
            if self.skipping > 0 {
                return Ok(None);
            }
        }
        let framing = self.packets.framing;
        let Some(header) = Header::parse(framing, src)? else {
            return Ok(None);
        };
        if header.len <= self.packets.max_content_length {
            return Ok(self.packets.decode_parsed(header, src)?.map(Frame::Packet));
        }
        if header.len > self.max_skip {
            return Err(FrameError::ContentTooLarge {
                len: header.len.into(),
                max: self.packets.max_content_length,
            });
        }
        src.advance(framing.header_len());
        self.skipping = header.len;
        self.skip(src);
        Ok(Some(Frame::Oversize(header)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() && self.skipping == 0 => Ok(None),
            None => Err(FrameError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed inside a packet ({} bytes unparsed, {} left to skip{})",
                    src.len(),
                    self.skipping,
                    hint(src)
                ),
            ))),
        }
    }
}

impl Encoder<Packet> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, packet: Packet, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.packets.encode(&packet, dst)
    }
}

impl Encoder<&Packet> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, packet: &Packet, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.packets.encode(packet, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(framing: Framing, id: u16, op: u16, len: u32) -> BytesMut {
        let mut buf = BytesMut::new();
        Header { id, op, len }.encode(framing, &mut buf);
        buf
    }

    /// An announced 5 MiB reserves room for the next read only, not for 5 MiB.
    #[test]
    fn announced_length_is_not_reserved() {
        for framing in [Framing::Frisbee, Framing::Legacy] {
            let mut src = header(framing, 1, 10, DEFAULT_MAX_CONTENT_LENGTH);
            src.put_u8(0xaa);
            assert_eq!(PacketCodec::new(framing).decode(&mut src).unwrap(), None);
            assert!(src.capacity() < 128 * 1024, "capacity {}", src.capacity());
            assert_eq!(src.len(), framing.header_len() + 1, "nothing consumed");
            let mut src = header(framing, 1, 10, DEFAULT_MAX_CONTENT_LENGTH);
            src.put_u8(0xaa);
            assert_eq!(
                FrameCodec::new(PacketCodec::new(framing))
                    .decode(&mut src)
                    .unwrap(),
                None
            );
            assert!(src.capacity() < 128 * 1024, "capacity {}", src.capacity());
        }
    }

    /// Bytes arriving `chunk` at a time for a header announcing `announced` of which `sent`
    /// come, read as frpc's reader (and `FramedRead`) reads (reserve one byte, read into the
    /// spare capacity, decode): the buffer's capacity stays within a small multiple of what
    /// arrived, and it moves (a reallocation copying what was buffered) only a logarithmic
    /// number of times.
    fn arrive(announced: u32, sent: usize, chunk: usize) -> (usize, usize, Option<Packet>) {
        let mut codec = PacketCodec::new(Framing::Frisbee);
        let mut src = BytesMut::with_capacity(64 * 1024);
        src.extend_from_slice(&header(Framing::Frisbee, 1, 10, announced));
        let (mut moves, mut copied) = (0, 0);
        let mut arrived = 0;
        loop {
            if let Some(packet) = codec.decode(&mut src).unwrap() {
                return (moves, copied, Some(packet));
            }
            if arrived == sent {
                return (moves, copied, None);
            }
            let before = src.as_ptr();
            src.reserve(1);
            if src.as_ptr() != before {
                moves += 1;
                copied += src.len();
            }
            let n = chunk.min(sent - arrived).min(src.capacity() - src.len());
            src.put_bytes((arrived % 251) as u8, n);
            arrived += n;
            let len = src.len();
            assert!(
                src.capacity() <= 4 * len + 2 * READ_RESERVE,
                "capacity {} for {len} bytes arrived",
                src.capacity()
            );
        }
    }

    /// A peer that announces 5 MiB and sends 1 MiB makes us hold about 1 MiB, not 5.
    #[test]
    fn memory_stays_bounded_by_what_arrived() {
        for chunk in [1000, 16 * 1024, 200 * 1024] {
            let (moves, copied, packet) = arrive(DEFAULT_MAX_CONTENT_LENGTH, 1 << 20, chunk);
            assert_eq!(packet, None);
            assert!(moves <= 8, "{moves} reallocations at {chunk}-byte reads");
            assert!(copied <= 2 << 20, "{copied} bytes copied at {chunk}-byte reads");
        }
    }

    /// A 1 MiB packet arriving in pieces is copied O(its size) times in all, not once per
    /// `READ_RESERVE`, and comes out whole.
    #[test]
    fn large_packet_grows_geometrically() {
        let len = 1 << 20;
        for chunk in [4096, 64 * 1024, 300 * 1024] {
            let (moves, copied, packet) = arrive(len, len as usize, chunk);
            let packet = packet.expect("whole packet");
            assert_eq!(packet.content.len(), len as usize);
            assert!(moves <= 8, "{moves} reallocations at {chunk}-byte reads");
            assert!(copied <= 2 << 20, "{copied} bytes copied at {chunk}-byte reads");
        }
    }

    /// Four 1 MiB packets back to back, read `chunk` bytes at a time as `FramedRead` reads
    /// (reserve one byte, read what the socket has up to the spare capacity, decode): the bytes
    /// buffer moves copied for each packet, and the codec. With `hold`, each packet lives until
    /// the next one is whole (its reply still being written); without, it is dropped at once
    /// (a server whose reply is written before the client sends again).
    fn back_to_back(chunk: usize, hold: bool) -> (Vec<usize>, PacketCodec) {
        let len = 1 << 20;
        let mut codec = PacketCodec::new(Framing::Frisbee);
        let mut src = BytesMut::with_capacity(64 * 1024);
        let mut stream = Vec::new();
        for id in 0..4 {
            stream.extend_from_slice(&header(Framing::Frisbee, id, 10, len));
            stream.extend((0..len).map(|i| (i as u8) ^ (id as u8)));
        }
        let (mut at, mut copied, mut held) = (0, 0, None);
        let mut moved = Vec::new();
        while at < stream.len() {
            let before = src.as_ptr();
            src.reserve(1);
            if src.as_ptr() != before {
                copied += src.len();
            }
            let n = chunk.min(stream.len() - at).min(src.capacity() - src.len());
            src.extend_from_slice(&stream[at..at + n]);
            at += n;
            loop {
                let before = (src.as_ptr(), src.len());
                let packet = codec.decode(&mut src).unwrap();
                if packet.is_none() && src.as_ptr() != before.0 {
                    copied += before.1;
                }
                let Some(packet) = packet else { break };
                assert_eq!(packet.content.len(), len as usize);
                assert_eq!(packet.content[5], 5 ^ (packet.id as u8));
                moved.push(std::mem::take(&mut copied));
                // Held, the one before it is dropped only now.
                held = hold.then_some(packet);
            }
        }
        drop(held);
        assert_eq!(moved.len(), 4);
        (moved, codec)
    }

    /// 1 MiB packets, each dropped before the next arrives: after the first, the buffer is
    /// reused in place, and the bytes moved per packet are a read's worth, not the packet.
    #[test]
    fn large_packets_reuse_the_buffer() {
        let chunk = 48 * 1024;
        let (moved, _) = back_to_back(chunk, false);
        for (i, &copied) in moved.iter().enumerate().skip(1) {
            assert!(
                copied <= 2 * chunk,
                "packet {i}: {copied} bytes copied ({moved:?})"
            );
        }
    }

    /// 1 MiB packets, each kept until the next one is whole: the buffer cannot be reused, but
    /// after the first packet each one gets its room at once, so the bytes copied per packet
    /// are a read's worth, not the packet. A larger claim after them still grows with what
    /// arrives.
    #[test]
    fn packets_as_large_as_one_already_sent_get_their_room_at_once() {
        let chunk = 48 * 1024;
        let (moved, mut codec) = back_to_back(chunk, true);
        for (i, &copied) in moved.iter().enumerate().skip(1) {
            assert!(
                copied <= 2 * chunk,
                "packet {i}: {copied} bytes copied ({moved:?})"
            );
        }
        // A 5 MiB claim of which 64 KiB came: room for the proven 1 MiB at most, not 5.
        let mut src = BytesMut::new();
        src.extend_from_slice(&header(Framing::Frisbee, 9, 10, DEFAULT_MAX_CONTENT_LENGTH));
        src.put_bytes(1, 64 * 1024);
        assert_eq!(codec.decode(&mut src).unwrap(), None);
        let proven = Framing::Frisbee.header_len() + (1 << 20);
        assert!(
            src.capacity() <= proven + 64 * 1024 + 16,
            "capacity {}",
            src.capacity()
        );
    }

    /// Request and reply: each 1 MiB packet arrives whole in the socket after the previous
    /// one was split off (still held: its reply is being written), and every read takes all
    /// the room there is. The room left behind a packet must not take most of the next one
    /// before its header asks for more (that would copy it whole): copies stay a read's worth.
    #[test]
    fn a_packet_read_at_once_after_another_is_not_copied_whole() {
        let len = 1 << 20;
        let mut codec = PacketCodec::new(Framing::Frisbee);
        let mut src = BytesMut::with_capacity(64 * 1024);
        let mut held = None;
        for id in 0..4u16 {
            let mut packet = header(Framing::Frisbee, id, 10, len).to_vec();
            packet.extend((0..len).map(|i| (i as u8) ^ (id as u8)));
            let (mut at, mut copied) = (0, 0);
            let decoded = loop {
                let before = src.as_ptr();
                src.reserve(1);
                if src.as_ptr() != before {
                    copied += src.len();
                }
                let n = (packet.len() - at).min(src.capacity() - src.len());
                src.extend_from_slice(&packet[at..at + n]);
                at += n;
                let before = (src.as_ptr(), src.len());
                let decoded = codec.decode(&mut src).unwrap();
                if decoded.is_none() && src.as_ptr() != before.0 {
                    copied += before.1;
                }
                if let Some(decoded) = decoded {
                    break decoded;
                }
            };
            assert_eq!(decoded.content[7], 7 ^ (id as u8));
            // The first grows from nothing; every later one lands in room made for it.
            if id > 0 {
                assert_eq!(copied, 0, "packet {id}: {copied} bytes copied");
            }
            held = Some(decoded);
        }
        drop(held);
    }

    /// Small packets after a large one use the room it left: the buffer is not replaced by a
    /// fresh one the size of the large packet (an allocation) once per small packet.
    #[test]
    fn small_packets_after_a_large_one_keep_the_buffer() {
        let mut codec = PacketCodec::new(Framing::Frisbee);
        let mut src = BytesMut::with_capacity(2 << 20);
        src.extend_from_slice(&header(Framing::Frisbee, 1, 10, 1 << 20));
        src.put_bytes(7, 1 << 20);
        let large = codec.decode(&mut src).unwrap().expect("the large packet");
        let mut room = src.capacity();
        assert!(room > READ_RESERVE, "room {room}");
        for id in 0..1000 {
            src.extend_from_slice(&header(Framing::Frisbee, id, 10, 32));
            src.put_bytes(1, 32);
            let small = codec.decode(&mut src).unwrap().expect("a small packet");
            assert_eq!(small.content.len(), 32);
            // The same room, 42 bytes less each time.
            assert_eq!(src.capacity(), room - 42, "packet {id}");
            room = src.capacity();
        }
        drop(large);
    }

    /// The content stays a zero-copy slice of the read buffer, even after growing in steps.
    #[test]
    fn content_is_split_off_the_buffer() {
        let len = 3 * READ_RESERVE as u32 + 5;
        let mut codec = PacketCodec::new(Framing::Frisbee);
        let mut src = header(Framing::Frisbee, 3, 11, len);
        let mut packet = None;
        for _ in 0..len {
            assert!(packet.is_none());
            src.put_u8(7);
            packet = codec.decode(&mut src).unwrap();
        }
        let packet = packet.expect("whole packet");
        assert_eq!(packet.content.len(), len as usize);
        assert!(packet.content.iter().all(|&b| b == 7));
    }

    /// Above `max_skip` an oversize header is still fatal.
    #[test]
    fn oversize_beyond_max_skip_is_an_error() {
        let codec = PacketCodec::new(Framing::Legacy).with_max_content_length(10);
        let mut frames = codec.frames().with_max_skip(100);
        let mut src = header(Framing::Legacy, 1, 10, 101);
        assert!(matches!(
            frames.decode(&mut src),
            Err(FrameError::ContentTooLarge { len: 101, max: 10 })
        ));
        let mut src = header(Framing::Legacy, 1, 10, 100);
        assert_eq!(
            frames.decode(&mut src).unwrap(),
            Some(Frame::Oversize(Header {
                id: 1,
                op: 10,
                len: 100
            }))
        );
        assert_eq!(frames.skipping(), 100);
    }
}
