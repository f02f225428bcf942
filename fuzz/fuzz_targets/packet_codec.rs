//! Feeds arbitrary bytes, in chunks the input chooses, through the packet codec in both
//! framings and with a small and the default limit: it must never panic, and the packets it
//! yields must re-encode to exactly the bytes it consumed.
#![no_main]

use bytes::BytesMut;
use frpc_wire::{Framing, PacketCodec};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::{Decoder, Encoder};

fuzz_target!(|data: &[u8]| {
    let Some((&control, data)) = data.split_first() else {
        return;
    };
    let framing = if control & 1 == 0 {
        Framing::Frisbee
    } else {
        Framing::Legacy
    };
    let mut codec = PacketCodec::new(framing);
    if control & 2 != 0 {
        codec = codec.with_max_content_length(256);
    }
    let chunk = usize::from(control >> 2) + 1;
    let mut buf = BytesMut::new();
    let mut fed = 0;
    let mut reencoded = BytesMut::new();
    let mut failed = false;
    'feed: for piece in data.chunks(chunk) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(packet)) => {
                    assert!(packet.content.len() <= codec.max_content_length() as usize);
                    codec
                        .encode(&packet, &mut reencoded)
                        .expect("a decoded packet re-encodes");
                }
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break 'feed;
                }
            }
        }
    }
    let consumed = fed - buf.len();
    assert_eq!(
        &reencoded[..],
        &data[..consumed],
        "re-encoding differs from the input"
    );
    if !failed {
        let tail = buf.len();
        match codec.decode_eof(&mut buf) {
            Ok(None) => assert_eq!(tail, 0),
            Ok(Some(_)) => panic!("decode left a whole packet behind"),
            Err(_) => assert!(tail > 0),
        }
    }
});
