//! The one-byte kind tag that starts every polyglot value (spec §4.1).

/// A polyglot kind byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// `00`: an absent value (nil message, nil element).
    Nil = 0x00,
    /// `01`: a slice (repeated field) header.
    Slice = 0x01,
    /// `02`: a map header.
    Map = 0x02,
    /// `03`: only as the element or value kind of message collections.
    Any = 0x03,
    /// `04`: bytes.
    Bytes = 0x04,
    /// `05`: a UTF-8 string.
    String = 0x05,
    /// `06`: an error (a string follows).
    Error = 0x06,
    /// `07`: bool.
    Bool = 0x07,
    /// `08`: u8 (the fRPC flags byte).
    U8 = 0x08,
    /// `09`: u16 (the fRPC stream-open operation).
    U16 = 0x09,
    /// `0A`: u32, enum indices and every length or count.
    U32 = 0x0A,
    /// `0B`: u64.
    U64 = 0x0B,
    /// `0C`: zigzag i32.
    I32 = 0x0C,
    /// `0D`: zigzag i64.
    I64 = 0x0D,
    /// `0E`: big-endian f32.
    F32 = 0x0E,
    /// `0F`: big-endian f64.
    F64 = 0x0F,
}

impl Kind {
    /// The kind's byte.
    pub const fn byte(self) -> u8 {
        self as u8
    }

    /// The kind a byte names, if any.
    pub const fn from_byte(byte: u8) -> Option<Kind> {
        Some(match byte {
            0x00 => Kind::Nil,
            0x01 => Kind::Slice,
            0x02 => Kind::Map,
            0x03 => Kind::Any,
            0x04 => Kind::Bytes,
            0x05 => Kind::String,
            0x06 => Kind::Error,
            0x07 => Kind::Bool,
            0x08 => Kind::U8,
            0x09 => Kind::U16,
            0x0A => Kind::U32,
            0x0B => Kind::U64,
            0x0C => Kind::I32,
            0x0D => Kind::I64,
            0x0E => Kind::F32,
            0x0F => Kind::F64,
            _ => return None,
        })
    }

    /// A short human name, used in error messages.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Nil => "nil",
            Kind::Slice => "slice",
            Kind::Map => "map",
            Kind::Any => "any",
            Kind::Bytes => "bytes",
            Kind::String => "string",
            Kind::Error => "error",
            Kind::Bool => "bool",
            Kind::U8 => "u8",
            Kind::U16 => "u16",
            Kind::U32 => "u32",
            Kind::U64 => "u64",
            Kind::I32 => "i32",
            Kind::I64 => "i64",
            Kind::F32 => "f32",
            Kind::F64 => "f64",
        }
    }
}
