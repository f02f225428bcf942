//! `FrameCodec`: oversize packets are reported and skipped, whatever the chunking, in both
//! framings, and the stream carries on.

use bytes::{BufMut, BytesMut};
use frpc_wire::{Frame, FrameCodec, FrameError, Framing, Header, Packet, PacketCodec};
use proptest::prelude::*;
use tokio_util::codec::Decoder;

const LIMIT: u32 = 64;
const MAX_SKIP: u32 = 1000;

/// One packet of the stream: `len` content bytes, oversize when `len > LIMIT`.
fn packet(id: u16, len: u32) -> Packet {
    // Content that looks like headers, so a skip that is off by one would misparse.
    let content: Vec<u8> = (0..len).map(|i| [0x00, 0x0f, 0xff][i as usize % 3]).collect();
    Packet::new(id, 10 + id, content)
}

fn codec(framing: Framing) -> FrameCodec {
    PacketCodec::new(framing)
        .with_max_content_length(LIMIT)
        .frames()
        .with_max_skip(MAX_SKIP)
}

/// What the codec should yield for `packets`.
fn expected(packets: &[Packet]) -> Vec<Frame> {
    packets
        .iter()
        .map(|p| {
            let len = p.content.len() as u32;
            if len > LIMIT {
                Frame::Oversize(Header {
                    id: p.id,
                    op: p.op,
                    len,
                })
            } else {
                Frame::Packet(p.clone())
            }
        })
        .collect()
}

/// The wire bytes (oversize packets written without the encoder's own check).
fn wire(framing: Framing, packets: &[Packet]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for p in packets {
        Header {
            id: p.id,
            op: p.op,
            len: p.content.len() as u32,
        }
        .encode(framing, &mut out);
        out.put_slice(&p.content);
    }
    out.to_vec()
}

/// Feeds `bytes` in chunks of the given sizes (cycled), decoding after each, as FramedRead does.
fn feed(mut codec: FrameCodec, bytes: &[u8], chunks: &[usize]) -> Result<Vec<Frame>, FrameError> {
    let mut src = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = bytes;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap()).clamp(1, rest.len());
        src.put_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(frame) = codec.decode(&mut src)? {
            frames.push(frame);
        }
        if codec.skipping() > 0 {
            // Skipped content is discarded as it arrives, never buffered.
            assert!(src.is_empty(), "{} bytes buffered while skipping", src.len());
        }
        // Never more than one packet's worth (header + LIMIT) is buffered.
        assert!(src.len() < framing_len(codec) + LIMIT as usize);
    }
    while let Some(frame) = codec.decode_eof(&mut src)? {
        frames.push(frame);
    }
    Ok(frames)
}

fn framing_len(codec: FrameCodec) -> usize {
    codec.packet_codec().framing().header_len()
}

fn stream() -> Vec<Packet> {
    [0, 5, 65, 64, 1000, 3, 200, 200, 0, 64, 999, 1]
        .iter()
        .enumerate()
        .map(|(i, &len)| packet(i as u16, len))
        .collect()
}

#[test]
fn one_byte_at_a_time_and_all_at_once() {
    let packets = stream();
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let bytes = wire(framing, &packets);
        for chunks in [&[1][..], &[bytes.len()], &[7, 1, 64, 3]] {
            assert_eq!(feed(codec(framing), &bytes, chunks).unwrap(), expected(&packets));
        }
    }
}

#[test]
fn oversize_is_yielded_as_soon_as_its_header_is_read() {
    let mut codec = codec(Framing::Frisbee);
    let mut src = BytesMut::from(&wire(Framing::Frisbee, &[packet(1, 500)])[..10]);
    assert_eq!(
        codec.decode(&mut src).unwrap(),
        Some(Frame::Oversize(Header {
            id: 1,
            op: 11,
            len: 500
        }))
    );
    assert_eq!(codec.skipping(), 500);
    assert!(codec.decode(&mut src).unwrap().is_none());
}

#[test]
fn eof_while_skipping_is_an_error() {
    let bytes = wire(Framing::Legacy, &[packet(1, 500)]);
    let err = feed(codec(Framing::Legacy), &bytes[..300], &[17]).unwrap_err();
    assert!(err.to_string().contains("left to skip"), "{err}");
}

#[test]
fn beyond_max_skip_is_fatal_as_before() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let bytes = wire(framing, &[packet(0, 3), packet(1, MAX_SKIP + 1)]);
        assert!(matches!(
            feed(codec(framing), &bytes, &[5]),
            Err(FrameError::ContentTooLarge { len, max: LIMIT }) if len == u64::from(MAX_SKIP) + 1
        ));
    }
}

/// `PacketCodec` itself still fails on an oversize header.
#[test]
fn packet_codec_is_unchanged() {
    let bytes = wire(Framing::Frisbee, &[packet(1, LIMIT + 1)]);
    let mut codec = PacketCodec::new(Framing::Frisbee).with_max_content_length(LIMIT);
    assert!(matches!(
        codec.decode(&mut BytesMut::from(&bytes[..])),
        Err(FrameError::ContentTooLarge { .. })
    ));
}

proptest! {
    #[test]
    fn any_chunking_any_lengths(
        lens in prop::collection::vec(prop_oneof![0..=LIMIT, LIMIT + 1..=MAX_SKIP], 0..12),
        chunks in prop::collection::vec(1usize..300, 1..8),
        legacy: bool,
    ) {
        let framing = if legacy { Framing::Legacy } else { Framing::Frisbee };
        let packets: Vec<Packet> =
            lens.iter().enumerate().map(|(i, &len)| packet(i as u16, len)).collect();
        let bytes = wire(framing, &packets);
        prop_assert_eq!(feed(codec(framing), &bytes, &chunks).unwrap(), expected(&packets));
    }
}
