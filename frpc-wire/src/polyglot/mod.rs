//! Polyglot, the tagged, schema-ordered encoding fRPC messages use (spec §4).
//!
//! Every value starts with a [`Kind`] byte; integers are LEB128 varints (zigzag for signed),
//! floats big-endian, lengths a full `0A` u32 value. [`encode`] writes values and knows their
//! exact sizes, [`Decoder`] reads them without ever panicking, [`value`] composes them into
//! fields and [`Message`] is the fRPC message envelope.

pub mod decode;
pub mod encode;
pub mod kind;
pub mod message;
pub mod value;
#[cfg(feature = "prost-types")]
mod well_known;

pub use decode::{DEFAULT_MAX_DEPTH, Decoder, MEMORY_FACTOR, MEMORY_SLACK};
pub use kind::Kind;
pub use message::{EOF_MESSAGE, Envelope, Message, decode_envelope, decode_nested, error_to_bytes};
