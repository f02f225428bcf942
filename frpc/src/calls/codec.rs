//! A message's encoding on the wire: polyglot (fRPC's, always with Go peers) or, between frpc
//! peers that negotiated the protobuf extension, the marker byte [`MARKER`] followed by the
//! message's standard protobuf encoding. Calls floor: unary calls and streams encode and decode
//! their messages here and nowhere else.
//!
//! A content is self-describing: no fRPC content starts with `FD` (polyglot envelopes start
//! with `00`, `06` or `08`, a stream-open message with `09`, an extension header with `FE`), so
//! receivers look at the first byte and need no state: a call that started before the
//! negotiation finished (polyglot) decodes as well as one after it. Errors and a stream's `EOF`
//! always stay polyglot.
//!
//! The gRPC face ([`Encoding::Grpc`]) has an encoding of its own, so its messages cross without a
//! copy: a request is the bare protobuf message (tonic's receive buffer, split off), a reply is
//! gRPC's message frame (a zero compression flag, the big-endian length, the protobuf message),
//! which the face sends as it is. Its calls say so by their context, not by a first byte.

use std::cell::RefCell;

use bytes::{BufMut, Bytes, BytesMut};
use frpc_wire::DecodeError;
use frpc_wire::polyglot::{self, Decoder, Envelope, Message};

use crate::config::DecodeLimits;
use crate::types::Encoded;

/// First byte of a protobuf-encoded message content.
pub(crate) const MARKER: u8 = 0xFD;

/// Whether `content` is a protobuf-encoded message.
#[inline]
pub(crate) fn is_protobuf(content: &[u8]) -> bool {
    content.first() == Some(&MARKER)
}

/// The length of gRPC's message prefix: the compression flag and the big-endian `u32` length.
pub(crate) const GRPC_PREFIX: usize = 5;

/// How a call's messages are encoded: what its request came in, its reply goes out in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// fRPC's own, which every peer reads.
    Polyglot,
    /// [`MARKER`], then protobuf: between frpc peers that negotiated the protobuf extension.
    Protobuf,
    /// The gRPC face's: a bare protobuf request, a reply framed as gRPC sends it.
    Grpc,
}

impl Encoding {
    /// The encoding of an fRPC message content, by its first byte.
    #[inline]
    pub(crate) fn of(content: &[u8]) -> Encoding {
        match is_protobuf(content) {
            true => Encoding::Protobuf,
            false => Encoding::Polyglot,
        }
    }
}

/// Encodes `message`: in protobuf when `protobuf` is set (the connection negotiated it) and its
/// type has a protobuf encoding, in polyglot otherwise. One allocation at the exact size either
/// way.
#[inline]
pub(crate) fn encode<M: Message>(message: &M, protobuf: bool) -> Bytes {
    if M::PROTOBUF && protobuf {
        return protobuf_buffer(message, message.protobuf_len());
    }
    small_buffer(message.polyglot_len(), |buf| message.encode_polyglot(buf))
}

/// [`MARKER`] and the protobuf encoding of `message` (`len` bytes), in one buffer: cut from the
/// thread's chunk when small ([`small_buffer`]), allocated at the exact size otherwise.
#[inline]
fn protobuf_buffer<M: Message>(message: &M, len: usize) -> Bytes {
    small_buffer(1 + len, |buf| {
        buf.put_u8(MARKER);
        message.encode_protobuf(buf);
    })
}

/// Decodes a message content, protobuf or polyglot by its first byte: the message, or the text
/// of a polyglot Error (a call's error, a stream's `EOF`). `bytes::Bytes` fields are zero-copy
/// slices of `content` in both encodings.
/// Polyglot is read within `limits` (nesting depth, memory budget).
#[inline]
pub(crate) fn decode<M: Message>(content: &Bytes, limits: DecodeLimits) -> Result<Envelope<M>, DecodeError> {
    decode_as(content, Encoding::of(content), limits)
}

/// Encodes a reply in `encoding`, the request's: [`encode`] for fRPC's two, gRPC's message frame
/// for the gRPC face (polyglot for a type without protobuf, which the face refuses to send).
#[inline]
pub(crate) fn encode_as<M: Message>(message: &M, encoding: Encoding) -> Bytes {
    match encoding {
        Encoding::Grpc if M::PROTOBUF => encode_grpc(message),
        encoding => encode(message, encoding != Encoding::Polyglot),
    }
}

/// [`encode_as`] for a reply given up, in parts where that saves a copy: a polyglot or protobuf
/// reply of a type with `bytes::Bytes` or `String` fields ([`Message::POLYGLOT_OWNED_PARTS`],
/// [`Message::PROTOBUF_OWNED_PARTS`]) of at least [`SPLICE_MIN`](frpc_wire::parts::SPLICE_MIN)
/// bytes leaves its large values in their own buffers. Everything else is [`encode_as`]'s one
/// buffer, at the same cost.
#[inline]
pub(crate) fn encode_reply<M: Message>(message: M, encoding: Encoding) -> Encoded {
    match encoding {
        Encoding::Polyglot if M::POLYGLOT_OWNED_PARTS => polyglot_parts(message),
        Encoding::Protobuf if M::PROTOBUF && M::PROTOBUF_OWNED_PARTS => protobuf_parts(message),
        encoding => encode_as(&message, encoding).into(),
    }
}

/// [`encode`] for a request given up, in parts where that saves a copy (as [`encode_reply`]).
#[inline]
pub(crate) fn encode_request<M: Message>(message: M, protobuf: bool) -> Encoded {
    match M::PROTOBUF && protobuf {
        true if M::PROTOBUF_OWNED_PARTS => protobuf_parts(message),
        false if M::POLYGLOT_OWNED_PARTS => polyglot_parts(message),
        protobuf => encode(&message, protobuf).into(),
    }
}

/// A protobuf message of a type with large-value fields: [`MARKER`] and the message, in parts
/// when large, in one buffer at the exact size otherwise.
#[inline]
fn protobuf_parts<M: Message>(message: M) -> Encoded {
    let len = message.protobuf_len();
    if len < frpc_wire::parts::SPLICE_MIN {
        return protobuf_buffer(&message, len).into();
    }
    encode_protobuf_parts(message)
}

/// A large protobuf message in parts (see [`encode_reply`]).
#[inline(never)]
fn encode_protobuf_parts<M: Message>(message: M) -> Encoded {
    let mut parts = frpc_wire::Parts::with_capacity(256);
    parts.buf_mut().put_u8(MARKER);
    message.into_protobuf_parts(&mut parts);
    Encoded::from_parts(parts)
}

/// A polyglot message of a type with large-value fields: in parts when large, in one buffer at
/// the exact size otherwise.
#[inline]
fn polyglot_parts<M: Message>(message: M) -> Encoded {
    let len = message.polyglot_len();
    if len >= frpc_wire::parts::SPLICE_MIN {
        return encode_parts(message);
    }
    small_buffer(len, |buf| message.encode_polyglot(buf)).into()
}

/// Encodings up to this size are cut from a per-thread chunk rather than allocated one by one:
/// a small request or reply, copied into the write buffer and dropped at once, then costs no
/// `malloc` and `free` (about 140 instructions a call on each side). One that has to wait in
/// the write queue is copied out first (`Outgoing::detached`).
const SMALL: usize = crate::transport::writer::SMALL_CONTENT;
/// The chunk they are cut from. Once every encoding cut from it is dropped it is reused from
/// its start; one kept (held by a retry layer) keeps its chunk alive, as a request read from
/// the socket keeps the read buffer it was split from.
const CHUNK: usize = 8 * 1024;

thread_local! {
    static CHUNK_BUF: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// `len` bytes written by `write` (`len` exact or an estimate; more only grows the buffer), in
/// a buffer cut from this thread's chunk when small, in one of their own otherwise.
#[inline]
fn small_buffer(len: usize, write: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut write = Some(write);
    if len <= SMALL {
        let cut = CHUNK_BUF.try_with(|chunk| {
            // Busy only if `write` itself encodes again (a hand-written `Message`): that one gets
            // a buffer of its own.
            let mut chunk = chunk.try_borrow_mut().ok()?;
            // Empty but for what an encoder that panicked half-way left.
            chunk.clear();
            if chunk.capacity() < len {
                chunk.reserve(CHUNK);
            }
            (write.take()?)(&mut chunk);
            Some(chunk.split().freeze())
        });
        if let Ok(Some(bytes)) = cut {
            return bytes;
        }
    }
    let mut buf = BytesMut::with_capacity(len);
    if let Some(write) = write {
        write(&mut buf);
    }
    buf.freeze()
}

/// A large polyglot message in parts (see [`encode_reply`]). What is not spliced in is mostly
/// the few bytes of kinds and lengths around the large values, so the buffer starts small.
#[inline(never)]
fn encode_parts<M: Message>(message: M) -> Encoded {
    let mut parts = frpc_wire::Parts::with_capacity(256);
    message.into_polyglot_parts(&mut parts);
    Encoded::from_parts(parts)
}

/// `message` as gRPC's message frame, in one allocation at the exact size. A length past
/// `u32::MAX` is written as `u32::MAX`: the face sees the frame does not add up and refuses it.
pub(crate) fn encode_grpc<M: Message>(message: &M) -> Bytes {
    let len = message.protobuf_len();
    let mut buf = BytesMut::with_capacity(GRPC_PREFIX + len);
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_protobuf(&mut buf);
    buf.freeze()
}

/// The message of a gRPC message frame (uncompressed, its length what the prefix says), as a
/// zero-copy slice; `None` for anything else.
#[cfg_attr(not(feature = "grpc"), allow(dead_code))]
pub(crate) fn grpc_message(frame: &Bytes) -> Option<Bytes> {
    let (prefix, message) = frame.split_first_chunk::<GRPC_PREFIX>()?;
    let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
    (prefix[0] == 0 && usize::try_from(len) == Ok(message.len())).then(|| frame.slice(GRPC_PREFIX..))
}

/// Decodes a content in `encoding` ([`Encoding::of`] it, or the gRPC face's), as [`decode`]
/// does; a gRPC request is protobuf with no marker to skip.
#[inline]
pub(crate) fn decode_as<M: Message>(
    content: &Bytes,
    encoding: Encoding,
    limits: DecodeLimits,
) -> Result<Envelope<M>, DecodeError> {
    match encoding {
        Encoding::Protobuf => {
            charge::<M>(&content[1..], content.len(), limits)?;
            M::decode_protobuf(content.slice(1..)).map(Envelope::Message)
        }
        Encoding::Grpc => decode_protobuf(content.clone(), limits),
        Encoding::Polyglot => {
            let mut decoder = Decoder::from_bytes(content)
                .with_max_depth(limits.max_depth)
                .with_memory_limit(limits.memory_budget(content.len()));
            polyglot::decode_envelope(&mut decoder)
        }
    }
}

/// Decodes a bare protobuf message (the gRPC face's), within `limits` as [`decode`] reads one.
/// Never inlined: fRPC's handlers carry this arm of [`decode_as`] too, and inlined it would
/// grow their decode for calls that never take it.
#[inline(never)]
pub(crate) fn decode_protobuf<M: Message>(
    body: Bytes,
    limits: DecodeLimits,
) -> Result<Envelope<M>, DecodeError> {
    charge::<M>(&body, body.len(), limits)?;
    M::decode_protobuf(body).map(Envelope::Message)
}

/// prost allocates what the input asks for: a type that can be made to amplify is charged
/// against the budget of a `content_len`-byte content first.
#[inline]
fn charge<M: Message>(body: &[u8], content_len: usize, limits: DecodeLimits) -> Result<(), DecodeError> {
    if M::PROTOBUF_AMPLIFIES {
        let budget = limits.memory_budget(content_len);
        let mut budget = frpc_wire::protobuf_cost::Budget::new(budget, limits.max_depth);
        M::protobuf_cost(body, &mut budget)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use frpc_wire::polyglot::{Decoder, encode as enc};

    use super::*;

    /// A message with both encodings, as frpc-codegen emits it.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Both {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(bytes = "bytes", tag = "2")]
        data: Bytes,
    }

    impl Message for Both {
        const PROTOBUF: bool = true;
        fn protobuf_len(&self) -> usize {
            prost::Message::encoded_len(self)
        }
        fn encode_protobuf(&self, buf: &mut impl BufMut) {
            prost::Message::encode_raw(self, buf)
        }
        fn decode_protobuf(buf: Bytes) -> Result<Self, DecodeError> {
            prost::Message::decode(buf).map_err(|err| DecodeError::Protobuf(err.to_string()))
        }
        fn fields_len(&self) -> usize {
            enc::bytes_len(self.name.len()) + enc::bytes_len(self.data.len())
        }
        fn encode_fields(&self, buf: &mut impl BufMut) {
            enc::put_str(buf, &self.name);
            enc::put_bytes(buf, &self.data);
        }
        fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
            self.name = dec.string()?;
            self.data = dec.bytes()?;
            Ok(())
        }
    }

    /// A polyglot-only message (a Rust-first one).
    #[derive(Debug, Default, PartialEq)]
    struct Polyglot(u32);

    impl Message for Polyglot {
        fn fields_len(&self) -> usize {
            enc::u32_len(self.0)
        }
        fn encode_fields(&self, buf: &mut impl BufMut) {
            enc::put_u32(buf, self.0);
        }
        fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
            self.0 = dec.u32()?;
            Ok(())
        }
    }

    fn message_of(content: Envelope<Both>) -> Both {
        match content {
            Envelope::Message(m) => m,
            Envelope::Error(text) => panic!("an error: {text}"),
        }
    }

    #[test]
    fn both_encodings_round_trip_and_say_which_they_are() {
        let both = Both {
            name: "hi".into(),
            data: Bytes::from_static(b"\x00\xfd"),
        };
        let protobuf = encode(&both, true);
        assert_eq!(&protobuf[..], b"\xfd\x0a\x02hi\x12\x02\x00\xfd");
        assert!(is_protobuf(&protobuf));
        let polyglot = encode(&both, false);
        assert_eq!(polyglot, both.to_polyglot());
        assert!(!is_protobuf(&polyglot));
        for content in [&protobuf, &polyglot] {
            let back = message_of(decode(content, DecodeLimits::default()).unwrap());
            assert_eq!(back, both);
            // `Bytes` fields are slices of the content, in both encodings.
            let start = content.as_ptr() as usize;
            let at = back.data.as_ptr() as usize;
            assert!(at > start && at + back.data.len() <= start + content.len());
        }
        // Errors and EOF stay polyglot and decode as before.
        let eof = Bytes::from_static(polyglot::EOF_MESSAGE);
        assert!(
            matches!(decode::<Both>(&eof, DecodeLimits::default()), Ok(Envelope::Error(text)) if text == "EOF")
        );
    }

    #[test]
    fn the_grpc_encoding_reads_bare_protobuf_and_writes_grpc_frames() {
        let both = Both {
            name: "hi".into(),
            data: Bytes::from_static(b"\x00\xfd"),
        };
        let frame = encode_as(&both, Encoding::Grpc);
        assert_eq!(&frame[..], b"\x00\x00\x00\x00\x08\x0a\x02hi\x12\x02\x00\xfd");
        let message = grpc_message(&frame).unwrap();
        assert_eq!(message, encode(&both, true).slice(1..));
        let back = message_of(decode_as(&message, Encoding::Grpc, DecodeLimits::default()).unwrap());
        assert_eq!(back, both);
        // fRPC's two encodings are what `encode` and `decode` make of them.
        for (encoding, protobuf) in [(Encoding::Protobuf, true), (Encoding::Polyglot, false)] {
            let content = encode_as(&both, encoding);
            assert_eq!(content, encode(&both, protobuf));
            assert_eq!(Encoding::of(&content), encoding);
            let back = decode_as(&content, encoding, DecodeLimits::default()).unwrap();
            assert_eq!(message_of(back), both);
        }
        // Not frames: too short, compressed, or a length that does not add up.
        for bad in [
            &b"\x00\x00\x00\x00"[..],
            b"\x01\x00\x00\x00\x00",
            b"\x00\x00\x00\x00\x02\x08",
        ] {
            assert!(grpc_message(&Bytes::copy_from_slice(bad)).is_none(), "{bad:?}");
        }
        // A polyglot-only type has no gRPC encoding.
        assert!(
            decode_as::<Polyglot>(
                &Bytes::from_static(b"\x08\x07"),
                Encoding::Grpc,
                DecodeLimits::default()
            )
            .is_err()
        );
    }

    #[test]
    fn a_polyglot_only_type_stays_polyglot_and_refuses_protobuf() {
        let content = encode(&Polyglot(7), true);
        assert_eq!(content, Polyglot(7).to_polyglot());
        assert!(matches!(
            decode::<Polyglot>(&content, DecodeLimits::default()),
            Ok(Envelope::Message(Polyglot(7)))
        ));
        let err =
            decode::<Polyglot>(&Bytes::from_static(b"\xfd\x08\x07"), DecodeLimits::default()).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Protobuf(text) if text.contains("no protobuf encoding")),
            "{err}"
        );
    }

    /// Small encodings share this thread's chunk, one after another, and stay intact however
    /// long one is kept (that no call allocates is `tests/allocations.rs`'s to show).
    #[test]
    fn small_encodings_share_a_chunk_and_keep_their_bytes() {
        let message = |n: u32| Both {
            name: format!("m{n}"),
            data: Bytes::from(n.to_le_bytes().to_vec()),
        };
        // Kept: one early encoding, while many more are cut (and dropped) past the chunk's end.
        let kept = encode(&message(0), false);
        let mut second = encode(&message(1), true);
        for n in 2..5_000 {
            let content = encode(&message(n), n % 2 == 0);
            assert_eq!(
                message_of(decode(&content, DecodeLimits::default()).unwrap()),
                message(n)
            );
            if n == 2_500 {
                second = content; // a later one kept too, in another chunk
            }
        }
        assert_eq!(kept, message(0).to_polyglot());
        assert_eq!(
            message_of(decode(&second, DecodeLimits::default()).unwrap()),
            message(2_500)
        );
        let (a, b) = (encode(&Polyglot(1), false), encode(&Polyglot(2), false));
        assert_eq!(b.as_ptr() as usize, a.as_ptr() as usize + a.len());
        assert_eq!((a, b), (Polyglot(1).to_polyglot(), Polyglot(2).to_polyglot()));
        // A 512-byte string encodes to a few bytes more (its kind and length): still cut from
        // the chunk, in both encodings (a buffer of its own cost a `malloc` and a `free`).
        for protobuf in [false, true] {
            let text = Both {
                name: "x".repeat(512),
                data: Bytes::new(),
            };
            let (a, b) = (encode(&text, protobuf), encode(&text, protobuf));
            assert!(a.len() > 512);
            assert_eq!(
                b.as_ptr() as usize,
                a.as_ptr() as usize + a.len(),
                "protobuf: {protobuf}"
            );
            assert_eq!(message_of(decode(&b, DecodeLimits::default()).unwrap()), text);
        }
    }

    /// An encoder that encodes again while writing (a hand-written `Message`) gets a buffer of
    /// its own instead of a second borrow of the chunk; one that panics half-way leaves nothing
    /// behind for the next; an encoding over `SMALL` gets its own buffer.
    #[test]
    fn nested_panicking_and_large_encodings_stay_whole() {
        #[derive(Default)]
        struct Nested;
        impl Message for Nested {
            fn fields_len(&self) -> usize {
                enc::u32_len(7)
            }
            fn encode_fields(&self, buf: &mut impl BufMut) {
                let inner = encode(&Polyglot(7), false);
                assert_eq!(inner, Polyglot(7).to_polyglot());
                enc::put_u32(buf, 7);
            }
            fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
                dec.u32().map(drop)
            }
        }
        assert_eq!(encode(&Nested, false), Polyglot(7).to_polyglot());

        #[derive(Default)]
        struct Panics;
        impl Message for Panics {
            fn fields_len(&self) -> usize {
                8
            }
            fn encode_fields(&self, buf: &mut impl BufMut) {
                buf.put_slice(b"half");
                panic!("an encoder failed half-way");
            }
            fn decode_fields(&mut self, _: &mut Decoder<'_>) -> Result<(), DecodeError> {
                Ok(())
            }
        }
        assert!(std::panic::catch_unwind(|| encode(&Panics, false)).is_err());
        assert_eq!(encode(&Polyglot(9), false), Polyglot(9).to_polyglot());

        let large = Both {
            name: "x".repeat(SMALL),
            data: Bytes::new(),
        };
        let chunk_at = || CHUNK_BUF.with(|chunk| chunk.borrow().as_ptr() as usize);
        let before = chunk_at();
        let content = encode(&large, false);
        assert_eq!(content, large.to_polyglot());
        assert_eq!(chunk_at(), before, "cut from the chunk");
        // One of `SMALL` bytes is cut from it.
        let small = Both {
            name: "x".repeat(SMALL - 9),
            data: Bytes::new(),
        };
        assert_eq!(small.polyglot_len(), SMALL);
        let content = encode(&small, false);
        assert_eq!(content.as_ptr() as usize + SMALL, chunk_at());
    }

    /// Random bytes behind the marker: an answer, never a panic.
    #[test]
    fn random_protobuf_contents_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut errors = 0;
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let mut bytes = vec![MARKER];
            bytes.extend((0..len).map(|_| match next() % 3 {
                0 => (next() % 0x20) as u8, // plausible tags and lengths
                _ => next() as u8,
            }));
            errors += usize::from(decode::<Both>(&Bytes::from(bytes), DecodeLimits::default()).is_err());
        }
        assert!(errors > 0, "random bytes all decoded");
        assert!(matches!(
            decode::<Both>(&Bytes::from_static(b"\xfd\x0a\x09hi"), DecodeLimits::default()),
            Err(DecodeError::Protobuf(_))
        ));
    }

    /// A message given up (a generated reply, a generated client's request) sends a large
    /// `String` from its own buffer in polyglot; a small one is one buffer, and so is the
    /// protobuf of a Rust-first type (prost writes it). The bytes are the one-buffer
    /// encoding's either way.
    #[test]
    #[cfg(feature = "macros")]
    fn large_strings_given_up_leave_from_their_own_buffers() {
        use crate::health::HealthCheckRequest;
        let message = |len: usize| HealthCheckRequest {
            service: "s".repeat(len),
        };
        for len in [frpc_wire::parts::SPLICE_MIN, 1 << 20] {
            let (request, reply) = (message(len), message(len));
            let (whole, at) = (
                request.to_polyglot(),
                [request.service.as_ptr(), reply.service.as_ptr()],
            );
            let encodings = [
                encode_request(request, false),
                encode_reply(reply, Encoding::Polyglot),
            ];
            for (encoded, at) in encodings.into_iter().zip(at) {
                let parts = encoded.into_inner().expect_err("in parts");
                assert!(parts.iter().any(|part| part.as_ptr() == at), "{len}: handed over");
                assert_eq!(parts.concat(), whole);
            }
        }
        let small = message(frpc_wire::parts::SPLICE_MIN - 10);
        assert_eq!(
            encode_request(small.clone(), false).into_inner(),
            Ok(small.to_polyglot())
        );
        let protobuf = encode_request(message(1 << 20), true)
            .into_inner()
            .expect("one buffer");
        assert_eq!(protobuf[0], MARKER);
        let reply = encode_reply(message(1 << 20), Encoding::Protobuf).into_inner();
        assert_eq!(reply.map(|one| one[0]), Ok(MARKER));
    }
}
