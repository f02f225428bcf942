//! Feeds arbitrary bytes, in chunks the input chooses, through the packet codec in both
//! framings and with a small and the default limit: it must never panic, and every packet it
//! yields must re-encode.
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
    for piece in data.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(packet)) => {
                    let mut out = BytesMut::new();
                    codec
                        .encode(&packet, &mut out)
                        .expect("a decoded packet re-encodes");
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    let _ = codec.decode_eof(&mut buf);
});
