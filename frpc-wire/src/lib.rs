//! Bytes on the wire for frpc: Frisbee packet framing and the polyglot encoding, byte-compatible
//! with Go's `frisbee-go` and `polyglot/v2`.
//!
//! - [`header`]: the 10-byte Frisbee v0.11 header (magic `00 0F`) and the legacy 8-byte one.
//! - [`codec`]: tokio-util codecs yielding [`Packet`]s whose content is a zero-copy slice
//!   ([`PacketCodec`]), or [`Frame`]s that also report oversize packets and skip them
//!   ([`FrameCodec`]).
//! - [`copy`]: copies that stay fast wherever the allocator put their buffers (`rep movsb` on
//!   AMD is 12–60× slower toward a destination just past its source modulo 4 KiB).
//! - [`polyglot`]: the value encoding, its never-panicking [`polyglot::Decoder`] (with a nesting
//!   limit and a memory budget: a decoded message costs at most 11 × its encoded size + 64 KiB,
//!   see [`polyglot::decode`]) and the fRPC message envelope ([`polyglot::Message`]).
//!
//! ```
//! use bytes::BytesMut;
//! use frpc_wire::{Framing, Packet, PacketCodec};
//! use frpc_wire::polyglot::{encode, Decoder};
//! use tokio_util::codec::{Decoder as _, Encoder as _};
//!
//! // A string, as Go's polyglot writes it.
//! let mut content = BytesMut::new();
//! encode::put_str(&mut content, "hi");
//! assert_eq!(&content[..], &[0x05, 0x0a, 0x02, b'h', b'i']);
//!
//! // Framed in a v0.11 packet, then parsed back.
//! let mut codec = PacketCodec::new(Framing::Frisbee);
//! let mut wire = BytesMut::new();
//! codec.encode(Packet::new(1, 10, content.freeze()), &mut wire)?;
//! assert_eq!(&wire[..10], &[0x00, 0x0f, 0x00, 0x01, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x05]);
//! let packet = codec.decode(&mut wire)?.expect("a whole packet");
//! assert_eq!(Decoder::from_bytes(&packet.content).str()?, "hi");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod codec;
pub mod copy;
pub mod error;
pub mod header;
pub mod packet;
pub mod parts;
pub mod polyglot;
pub mod protobuf_cost;

pub use codec::{Frame, FrameCodec, PacketCodec};
pub use error::{DecodeError, FrameError};
pub use header::{DEFAULT_MAX_CONTENT_LENGTH, Framing, Header, MAGIC};
pub use packet::{Packet, op};
pub use parts::Parts;
