//! The Go packet captures (`testdata/vectors/capture-frisbee-v0.1{0,1}.json`) through the
//! codec: every packet parses with its framing and re-encodes byte-identical, in any chunking.

use bytes::{Bytes, BytesMut};
use frpc_wire::polyglot::{Decoder, EOF_MESSAGE, Kind};
use frpc_wire::{FrameError, Framing, Header, Packet, PacketCodec};
use tokio_util::codec::{Decoder as _, Encoder as _};

#[derive(Debug)]
struct Captured {
    packet: Packet,
    /// The header as the JSON states it (`id`, `op`, `len`).
    header: Header,
    wire: Vec<u8>,
}

fn load(file: &'static str) -> (Framing, Vec<Captured>) {
    let capture = frpc_testdata::Capture::load(file);
    let framing = if capture.header_size == 10 {
        Framing::Frisbee
    } else {
        Framing::Legacy
    };
    let out = capture
        .packets()
        .map(|(_, p)| {
            if let Some(magic) = p.magic {
                assert_eq!(magic, frpc_wire::MAGIC);
                assert_eq!(&p.header[..2], &[0x00, 0x0f]);
            }
            let len = u32::try_from(p.content.len()).unwrap();
            Captured {
                packet: Packet::new(p.id, p.op, p.content.clone()),
                header: Header {
                    id: p.id,
                    op: p.op,
                    len,
                },
                wire: p.wire(),
            }
        })
        .collect();
    (framing, out)
}

const CAPTURES: [(&str, Framing, usize); 2] = [
    ("capture-frisbee-v0.11.json", Framing::Frisbee, 10),
    ("capture-frisbee-v0.10.json", Framing::Legacy, 8),
];

#[test]
fn every_packet_parses_and_reencodes_byte_identical() {
    for (file, framing, header_len) in CAPTURES {
        let (found, packets) = load(file);
        assert_eq!(found, framing);
        assert_eq!(framing.header_len(), header_len);
        assert_eq!(packets.len(), 38, "{file}");
        for captured in &packets {
            let mut codec = PacketCodec::new(framing);
            let mut buf = BytesMut::from(&captured.wire[..]);
            let packet = codec.decode(&mut buf).unwrap().expect("a whole packet");
            assert!(buf.is_empty());
            assert_eq!(packet, captured.packet, "{file}");
            let header = Header::parse(framing, &captured.wire).unwrap().unwrap();
            assert_eq!(
                header, captured.header,
                "{file}: the header says what the JSON says"
            );
            assert_eq!(
                (packet.id, packet.op, packet.content.len()),
                (header.id, header.op, header.len as usize)
            );
            let mut header_only = BytesMut::new();
            header.encode(framing, &mut header_only);
            assert_eq!(&header_only[..], &captured.wire[..header_len]);
            let mut out = BytesMut::new();
            codec.encode(&packet, &mut out).unwrap();
            assert_eq!(hex::encode(&out), hex::encode(&captured.wire), "{file}");
        }
    }
}

/// Feeds `stream` to a codec in chunks of the sizes `next_chunk` yields.
fn decode_chunked(framing: Framing, stream: &[u8], mut next_chunk: impl FnMut() -> usize) -> Vec<Packet> {
    let mut codec = PacketCodec::new(framing);
    let mut buf = BytesMut::new();
    let mut packets = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let n = next_chunk().clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(packet) = codec.decode(&mut buf).unwrap() {
            packets.push(packet);
        }
    }
    assert!(codec.decode_eof(&mut buf).unwrap().is_none());
    packets
}

#[test]
fn a_whole_capture_decodes_the_same_in_any_chunking() {
    for (file, framing, _) in CAPTURES {
        let (_, captured) = load(file);
        let stream: Vec<u8> = captured.iter().flat_map(|c| c.wire.clone()).collect();
        let expected: Vec<Packet> = captured.into_iter().map(|c| c.packet).collect();
        assert_eq!(
            decode_chunked(framing, &stream, || 1),
            expected,
            "{file}: 1-byte chunks"
        );
        assert_eq!(
            decode_chunked(framing, &stream, || 7),
            expected,
            "{file}: 7-byte chunks"
        );
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20 {
            let random = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 64) as usize + 1
            };
            assert_eq!(
                decode_chunked(framing, &stream, random),
                expected,
                "{file}: random chunks"
            );
        }
        assert_eq!(
            decode_chunked(framing, &stream, || usize::MAX),
            expected,
            "{file}: all at once"
        );
    }
}

#[test]
fn both_captures_carry_the_same_packets() {
    let (_, current) = load("capture-frisbee-v0.11.json");
    let (_, legacy) = load("capture-frisbee-v0.10.json");
    let current: Vec<&Packet> = current.iter().map(|c| &c.packet).collect();
    let legacy: Vec<&Packet> = legacy.iter().map(|c| &c.packet).collect();
    assert_eq!(current, legacy, "only the framing differs");
}

#[test]
fn the_wrong_framing_is_refused_with_bad_magic() {
    let (_, legacy) = load("capture-frisbee-v0.10.json");
    let stream: Vec<u8> = legacy.iter().flat_map(|c| c.wire.clone()).collect();
    let mut buf = BytesMut::from(&stream[..]);
    let err = PacketCodec::new(Framing::Frisbee).decode(&mut buf).unwrap_err();
    assert!(matches!(err, FrameError::BadMagic(0x0001)), "{err}");
    assert!(
        err.to_string().contains("legacy"),
        "the message hints at the cause: {err}"
    );
}

#[test]
fn an_oversize_header_is_refused_before_its_content_arrives() {
    let mut codec = PacketCodec::new(Framing::Frisbee).with_max_content_length(1024);
    // Only the header of a 4 GiB packet: refused at once, nothing reserved for it.
    let mut buf = BytesMut::from(&[0x00, 0x0f, 0, 1, 0, 10, 0xff, 0xff, 0xff, 0xff][..]);
    let err = codec.decode(&mut buf).unwrap_err();
    assert!(
        matches!(
            err,
            FrameError::ContentTooLarge {
                len: 4294967295,
                max: 1024
            }
        ),
        "{err}"
    );
    assert!(buf.capacity() < 1 << 20, "no allocation for the announced length");
    // Exactly the limit is fine; one more is refused, on decode and on encode.
    let mut at_limit = BytesMut::new();
    codec
        .encode(Packet::new(1, 10, vec![7u8; 1024]), &mut at_limit)
        .unwrap();
    assert_eq!(codec.decode(&mut at_limit).unwrap().unwrap().content.len(), 1024);
    let mut over = BytesMut::new();
    let err = codec
        .encode(Packet::new(1, 10, vec![7u8; 1025]), &mut over)
        .unwrap_err();
    assert!(matches!(
        err,
        FrameError::ContentTooLarge { len: 1025, max: 1024 }
    ));
    assert!(over.is_empty(), "nothing written for a refused packet");
    let mut over = BytesMut::from(&[0x00, 0x0f, 0, 1, 0, 10, 0, 0, 0x04, 0x01][..]);
    assert!(matches!(
        codec.decode(&mut over),
        Err(FrameError::ContentTooLarge { len: 1025, .. })
    ));
}

#[test]
fn the_default_limit_is_gos_five_mib() {
    let codec = PacketCodec::default();
    assert_eq!(codec.max_content_length(), 5 * 1024 * 1024);
    assert_eq!(codec.framing(), Framing::Frisbee);
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let mut codec = PacketCodec::new(framing);
        // A header announcing exactly 5 MiB waits for its content ...
        let mut header = BytesMut::new();
        codec.encode_header(7, 10, 5 * 1024 * 1024, &mut header).unwrap();
        assert!(codec.decode(&mut header).unwrap().is_none(), "{framing:?}");
        assert_eq!(
            header.len(),
            framing.header_len(),
            "{framing:?}: nothing consumed"
        );
        // ... one announcing a byte more is refused from the header alone.
        let mut header = BytesMut::new();
        Header {
            id: 7,
            op: 10,
            len: 5 * 1024 * 1024 + 1,
        }
        .encode(framing, &mut header);
        assert!(
            matches!(
                codec.decode(&mut header),
                Err(FrameError::ContentTooLarge {
                    len: 5_242_881,
                    max: 5_242_880
                })
            ),
            "{framing:?}"
        );
        let mut out = BytesMut::new();
        assert!(matches!(
            codec.encode_header(7, 10, 5 * 1024 * 1024 + 1, &mut out),
            Err(FrameError::ContentTooLarge { len: 5_242_881, .. })
        ));
        assert!(out.is_empty());
    }
}

#[test]
fn nothing_is_consumed_until_a_whole_packet_is_buffered() {
    let mut codec = PacketCodec::new(Framing::Legacy);
    let mut whole = BytesMut::new();
    codec
        .encode(Packet::new(3, 12, &b"hello"[..]), &mut whole)
        .unwrap();
    for cut in 0..whole.len() {
        let mut partial = BytesMut::from(&whole[..cut]);
        assert!(codec.decode(&mut partial).unwrap().is_none());
        assert_eq!(&partial[..], &whole[..cut], "cut at {cut}: untouched");
        if cut > 0 {
            assert!(
                codec.decode_eof(&mut partial).is_err(),
                "EOF inside a packet is an error"
            );
        }
    }
    assert!(codec.decode_eof(&mut BytesMut::new()).unwrap().is_none());
}

#[test]
fn heartbeats_are_zero_length_packets() {
    let mut codec = PacketCodec::new(Framing::Frisbee);
    let mut buf = BytesMut::new();
    codec.encode(Packet::ping(), &mut buf).unwrap();
    assert_eq!(&buf[..], &[0x00, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(codec.decode(&mut buf).unwrap().unwrap(), Packet::ping());
    assert!(frpc_wire::op::is_reserved(frpc_wire::op::STREAM));
    assert!(
        !frpc_wire::op::is_reserved(10),
        "10, 11 and 12 are ordinary operations"
    );
}

#[test]
fn decoded_content_is_a_slice_of_the_read_buffer() {
    let mut codec = PacketCodec::new(Framing::Frisbee);
    let mut buf = BytesMut::new();
    codec
        .encode(Packet::new(1, 10, vec![1u8; 100]), &mut buf)
        .unwrap();
    let start = buf.as_ptr() as usize;
    let packet = codec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(packet.content.as_ptr() as usize, start + 10, "no copy");
}

#[test]
fn captured_contents_read_as_the_spec_says() {
    let (_, packets) = load("capture-frisbee-v0.11.json");
    // The first Echo request: flags, Message "hi", Corpus WEB (1).
    let mut dec = Decoder::new(&packets[0].packet.content);
    assert_eq!(
        (dec.u8().unwrap(), dec.str().unwrap(), dec.u32().unwrap()),
        (0, "hi", 1)
    );
    // The Testy reply is an error "boom".
    let boom = packets
        .iter()
        .find(|c| c.packet.op == 12 && c.packet.content[0] == 0x06)
        .unwrap();
    assert_eq!(
        Decoder::new(&boom.packet.content)
            .take_error()
            .unwrap()
            .as_deref(),
        Some("boom")
    );
    // Streams end with the 7-byte EOF error, and open with `09 <method>`.
    assert!(
        packets
            .iter()
            .any(|c| c.packet.content == Bytes::from_static(EOF_MESSAGE))
    );
    let open = packets.iter().find(|c| c.packet.op == 2).unwrap();
    assert_eq!(Decoder::new(&open.packet.content).u16().unwrap(), 13);
}

/// Spec §4.8, byte by byte, with the bare decoder.
#[test]
fn the_worked_decodes_of_spec_section_4_8() {
    let (_, packets) = load("capture-frisbee-v0.11.json");
    let content = |i: usize| packets[i].packet.content.clone();

    // The first Echo request is exactly `08 00 05 0a 02 68 69 0a 01`.
    let request = content(0);
    assert_eq!(hex::encode(&request), "0800050a0268690a01");
    let mut dec = Decoder::from_bytes(&request);
    assert!(!dec.take_nil());
    assert_eq!(dec.take_error().unwrap(), None);
    assert_eq!(dec.u8().unwrap(), 0, "flags");
    assert_eq!(dec.str().unwrap(), "hi", "Message");
    assert_eq!(dec.u32().unwrap(), 1, "Corpus = WEB");
    assert_eq!(dec.remaining(), 0);

    // Its response: flags, Message "hi", nested Data{flags, "d", Checker 1}.
    let response = content(1);
    let mut dec = Decoder::from_bytes(&response);
    assert_eq!(dec.u8().unwrap(), 0);
    assert_eq!(dec.str().unwrap(), "hi");
    assert!(!dec.take_nil(), "the nested message is present");
    assert_eq!(dec.u8().unwrap(), 0);
    assert_eq!(dec.str().unwrap(), "d");
    assert_eq!(dec.u32().unwrap(), 1);
    assert_eq!(dec.remaining(), 0);

    // The Testy request (packet 4): SearchResponse{Results:[{Url:"u"}], Snippets:["a"]}.
    let testy = &packets[4].packet;
    assert_eq!((testy.id, testy.op), (1, 12));
    let mut dec = Decoder::from_bytes(&testy.content);
    assert_eq!(dec.u8().unwrap(), 0);
    assert_eq!(dec.slice_header(Kind::Any).unwrap(), 1, "Results");
    assert_eq!(dec.u8().unwrap(), 0);
    assert_eq!(dec.str().unwrap(), "u", "Url");
    assert_eq!(dec.str().unwrap(), "", "Title");
    assert_eq!(
        dec.slice_header(Kind::String).unwrap(),
        0,
        "the Result's Snippets"
    );
    assert_eq!(dec.slice_header(Kind::Any).unwrap(), 0, "Results2");
    assert_eq!(dec.slice_header(Kind::String).unwrap(), 1, "Snippets");
    assert_eq!(dec.str().unwrap(), "a");
    assert_eq!(dec.slice_header(Kind::String).unwrap(), 0, "Snippets2");
    assert_eq!(dec.remaining(), 0);

    // The Testy reply `06 05 0a 04 boom`: an Error, which the u8 flags read refuses untouched.
    let reply = content(5);
    assert_eq!(hex::encode(&reply), "06050a04626f6f6d");
    let mut dec = Decoder::from_bytes(&reply);
    assert!(dec.u8().is_err());
    assert_eq!(dec.take_error().unwrap().as_deref(), Some("boom"));
    assert_eq!(dec.remaining(), 0);

    // Every stream ends with the EOF marker; the one from packet 10 is exactly it.
    assert_eq!(&content(10)[..], EOF_MESSAGE);
    assert_eq!(
        Decoder::new(EOF_MESSAGE).take_error().unwrap().as_deref(),
        Some("EOF")
    );
    let eofs = packets.iter().filter(|c| c.packet.content == EOF_MESSAGE).count();
    assert_eq!(eofs, 7);
    // The handler error of the second server stream comes before its EOF.
    assert_eq!(Decoder::new(&content(14)).error().unwrap(), "search failed");
}
