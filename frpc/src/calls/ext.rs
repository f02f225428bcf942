//! Extensions beyond fRPC between frpc peers (cancellation, deadlines, status codes, metadata,
//! stream flow control and open acknowledgement):
//! the bytes (`docs/extensions.md` is their spec), the client's negotiation state and a server
//! call's state. Calls floor: the client's and the server's dispatchers use it.
//!
//! Everything is negotiated per connection: the client sends an OFFER on [`OP`], an frpc
//! server answers with an ACCEPT on the same operation, and only then does the client add
//! anything to its calls. A Go peer never sees an extension byte beyond the one OFFER it
//! ignores.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use frpc_wire::Packet;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::hash::IdMap;
use crate::metadata::Metadata;
use crate::status::{Code, Status};
use crate::types::Encoded;

/// The operation of every extension packet. fRPC's generator numbers methods from 10 upward,
/// one number per method of a .proto file, so it reaches 65535 only with 65,526 methods in one
/// file; the server builder refuses a service or raw route claiming it, and the client refuses
/// raw receivers on it.
pub(crate) const OP: u16 = 0xFFFF;
/// The version this implementation speaks.
pub(crate) const VERSION: u8 = 1;

/// Packet ids on [`OP`]: what the packet is.
pub(crate) const OFFER: u16 = 1;
/// The server's answer to an OFFER.
pub(crate) const ACCEPT: u16 = 2;
/// Cancels a call or stream.
pub(crate) const CANCEL: u16 = 3;
/// Flow control: the receiver of a stream grants its sender more credit (messages).
pub(crate) const CREDIT: u16 = 4;
/// Open acknowledgement: the server accepted a stream and started its handler.
pub(crate) const OPENED: u16 = 5;
/// Reflection: the client asks for the descriptors of every service the server serves (empty
/// content).
pub(crate) const REFLECT: u16 = 7;
/// Reflection: the server's answer to a REFLECT, in order: an encoded
/// `google.protobuf.FileDescriptorSet` (a file may repeat; readers keep the first of a name).
pub(crate) const REFLECTION: u16 = 8;
/// Drain notice: the server began shutting down; the client starts nothing new on the
/// connection (empty content).
pub(crate) const DRAIN: u16 = 9;
/// The client's answer to a DRAIN: nothing new follows it on the connection (empty content).
pub(crate) const DRAINED: u16 = 10;

/// Extension bits (the u32 of OFFER and ACCEPT).
pub(crate) const EXT_CANCEL: u32 = 1 << 0;
/// A unary call's timeout travels with it.
pub(crate) const EXT_DEADLINE: u32 = 1 << 1;
/// Error replies carry a status code.
pub(crate) const EXT_STATUS: u32 = 1 << 2;
/// Calls carry request metadata, replies response metadata.
pub(crate) const EXT_METADATA: u32 = 1 << 3;
/// Messages may travel in their protobuf encoding (`calls::codec`).
pub(crate) const EXT_PROTOBUF: u32 = 1 << 4;
/// Streams are flow controlled with credit windows (used only together with [`EXT_OPEN_ACK`],
/// whose OPENED packet carries the server's window).
pub(crate) const EXT_FLOW: u32 = 1 << 5;
/// The server acknowledges each stream it accepts (OPENED) before the client's call resolves.
pub(crate) const EXT_OPEN_ACK: u32 = 1 << 6;
/// Stream windows count bytes as well as messages (used only together with [`EXT_FLOW`]): the
/// OPEN field, OPENED and CREDIT carry a u32 of bytes behind the messages.
pub(crate) const EXT_BYTES: u32 = 1 << 7;
/// The server answers REFLECT packets with the file descriptors of its services.
pub(crate) const EXT_REFLECTION: u32 = 1 << 8;
/// The server tells the client when it begins shutting down (DRAIN), and serves the calls that
/// reach it until the client answers (DRAINED), as HTTP/2's GOAWAY lets a client move away
/// without losing a call.
pub(crate) const EXT_DRAIN: u32 = 1 << 9;
/// The server answers every CANCEL of a call or stream it was running with the call's one
/// reply (CANCELLED) or the stream's `EOF`, once nothing more will follow it: the client holds
/// an id it gave up until that answer, not for a guessed while.
pub(crate) const EXT_CANCEL_ANSWER: u32 = 1 << 10;
/// Everything this version knows.
pub(crate) const SUPPORTED: u32 = EXT_CANCEL
    | EXT_DEADLINE
    | EXT_STATUS
    | EXT_METADATA
    | EXT_PROTOBUF
    | EXT_FLOW
    | EXT_OPEN_ACK
    | EXT_BYTES
    | EXT_REFLECTION
    | EXT_DRAIN
    | EXT_CANCEL_ANSWER;

/// The bits a peer offers or accepts: everything, less protobuf when its config turns that off.
pub(crate) fn supported(protobuf: bool) -> u32 {
    match protobuf {
        true => SUPPORTED,
        false => SUPPORTED & !EXT_PROTOBUF,
    }
}

/// First byte of a content that starts with an extension header. No fRPC content starts with
/// it: a message envelope starts with `00`, `06` or `08`, a stream-open message with `09`, a
/// protobuf-encoded message with `FD` (`calls::codec`).
pub(crate) const PREFIX: u8 = 0xFE;

/// Header field types.
const FIELD_END: u8 = 0;
const FIELD_TIMEOUT: u8 = 1;
const FIELD_METADATA: u8 = 2;
const FIELD_STATUS: u8 = 3;
const FIELD_OPEN: u8 = 4;

/// An OFFER (client) or ACCEPT (server) packet: version, then the extension bits (u32 BE).
pub(crate) fn hello(id: u16, bits: u32) -> Packet {
    let mut content = BytesMut::with_capacity(5);
    content.put_u8(VERSION);
    content.put_u32(bits);
    Packet::new(id, OP, content.freeze())
}

/// Reads an OFFER or ACCEPT: the version and the bits. Later versions may append bytes, which
/// are ignored. `None` for a content too short (ignored like an unknown packet).
pub(crate) fn parse_hello(content: &[u8]) -> Option<(u8, u32)> {
    let (&version, rest) = content.split_first()?;
    let bits = rest.get(..4)?;
    match version {
        0 => None,
        _ => Some((version, u32::from_be_bytes(bits.try_into().ok()?))),
    }
}

/// A DRAIN (server) or DRAINED (client) packet: `id` alone, no content.
pub(crate) fn drain(id: u16) -> Packet {
    Packet::new(id, OP, Bytes::new())
}

/// A CANCEL for the unary call (`op`, `id`), or for stream `id` when `op` is 2 (STREAM).
pub(crate) fn cancel(op: u16, id: u16) -> Packet {
    let mut content = BytesMut::with_capacity(4);
    content.put_u16(op);
    content.put_u16(id);
    Packet::new(CANCEL, OP, content.freeze())
}

/// A stream window or a grant of credit: messages, and bytes on connections that negotiated
/// [`EXT_BYTES`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) messages: u32,
    pub(crate) bytes: Option<u32>,
}

impl Window {
    /// Its wire form: messages (u32 BE), then bytes (u32 BE) when there are any.
    fn put(&self, buf: &mut BytesMut) {
        buf.put_u32(self.messages);
        if let Some(bytes) = self.bytes {
            buf.put_u32(bytes);
        }
    }

    /// Reads a window at the start of `raw`: 4 bytes of messages, and bytes from the next 4
    /// when they are there (a peer without [`EXT_BYTES`] sends none).
    fn read(raw: &[u8]) -> Option<Window> {
        let u32_at = |at: usize| {
            raw.get(at..at + 4)
                .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
        };
        Some(Window {
            messages: u32_at(0)?,
            bytes: u32_at(4),
        })
    }
}

/// A CREDIT (`id` [`CREDIT`]) or OPENED (`id` [`OPENED`]) packet: the stream id, then the
/// window or credit.
pub(crate) fn stream_window(id: u16, stream: u16, window: Window) -> Packet {
    let mut content = BytesMut::with_capacity(10);
    content.put_u16(stream);
    window.put(&mut content);
    Packet::new(id, OP, content.freeze())
}

/// Reads a CREDIT or OPENED: the stream id and the window or credit.
pub(crate) fn parse_stream_window(content: &[u8]) -> Option<(u16, Window)> {
    let stream = content.get(..2)?;
    Some((
        u16::from_be_bytes([stream[0], stream[1]]),
        Window::read(&content[2..])?,
    ))
}

/// Reads a CANCEL: the operation and id it targets.
pub(crate) fn parse_cancel(content: &[u8]) -> Option<(u16, u16)> {
    let bytes = content.get(..4)?;
    Some((
        u16::from_be_bytes([bytes[0], bytes[1]]),
        u16::from_be_bytes([bytes[2], bytes[3]]),
    ))
}

/// What an extension header carries.
#[derive(Debug, Default)]
pub(crate) struct Header {
    /// How long the caller waits for the reply (requests).
    pub(crate) timeout: Option<Duration>,
    /// Request or response metadata.
    pub(crate) metadata: Option<Metadata>,
    /// The status code of an error reply.
    pub(crate) code: Option<Code>,
    /// A stream open asking for OPENED, with the opener's receive window (0 messages: no
    /// flow control on this stream).
    pub(crate) open: Option<Window>,
}

impl Header {
    /// Whether there is nothing to send.
    pub(crate) fn is_empty(&self) -> bool {
        self.timeout.is_none() && self.metadata.is_none() && self.code.is_none() && self.open.is_none()
    }

    /// [`Header::encode`] in front of a content that may be in parts: one buffer as ever for
    /// a content in one, a part of its own in front of a chain (which is not copied).
    pub(crate) fn encode_parts(&self, body: Encoded) -> Encoded {
        match body.into_inner() {
            Ok(one) => self.encode(&one).into(),
            Err(parts) => {
                let mut chain = Vec::with_capacity(1 + parts.len());
                chain.push(self.encode(&[]));
                chain.extend(parts);
                Encoded::chain(chain)
            }
        }
    }

    /// `PREFIX`, the fields, `FIELD_END`, then `body`.
    pub(crate) fn encode(&self, body: &[u8]) -> Bytes {
        let mut buf = BytesMut::with_capacity(16 + body.len());
        buf.put_u8(PREFIX);
        if let Some(timeout) = self.timeout {
            // Rounded up to whole milliseconds, at most u32::MAX (49 days).
            let ms = timeout.as_nanos().div_ceil(1_000_000).min(u128::from(u32::MAX)) as u32;
            field(&mut buf, FIELD_TIMEOUT, &ms.to_be_bytes());
        }
        if let Some(code) = self.code {
            field(&mut buf, FIELD_STATUS, &[code as u8]);
        }
        if let Some(metadata) = &self.metadata {
            let mut value = BytesMut::new();
            for (key, bytes) in metadata.iter() {
                value.put_u8(key.len() as u8); // keys are 1-255 bytes (checked on insert)
                value.put_slice(key.as_bytes());
                value.put_u32(bytes.len() as u32);
                value.put_slice(bytes);
            }
            field(&mut buf, FIELD_METADATA, &value);
        }
        if let Some(window) = self.open {
            let mut value = BytesMut::with_capacity(8);
            window.put(&mut value);
            field(&mut buf, FIELD_OPEN, &value);
        }
        buf.put_u8(FIELD_END);
        buf.put_slice(body);
        buf.freeze()
    }
}

fn field(buf: &mut BytesMut, kind: u8, value: &[u8]) {
    buf.put_u8(kind);
    buf.put_u32(value.len() as u32);
    buf.put_slice(value);
}

/// Whether `content` starts with an extension header.
pub(crate) fn has_prefix(content: &[u8]) -> bool {
    content.first() == Some(&PREFIX)
}

/// Where the extension header at the start of `content` ends (its fields walked, not parsed),
/// `None` if it is truncated.
pub(crate) fn header_len(content: &[u8]) -> Option<usize> {
    let mut at = 1;
    loop {
        let kind = *content.get(at)?;
        at += 1;
        if kind == FIELD_END {
            return Some(at);
        }
        let len = u32::from_be_bytes(content.get(at..at + 4)?.try_into().ok()?) as usize;
        at = at.checked_add(4 + len)?;
    }
}

/// Why an extension header cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// Truncated or malformed: the peer's bad argument.
    Malformed(String),
    /// A METADATA field over the connection's `max_metadata_size`.
    MetadataTooLarge {
        /// Its size as counted against the limit (see [`metadata_size`]).
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Malformed(reason) => f.write_str(reason),
            HeaderError::MetadataTooLarge { len, max } => write!(
                f,
                "metadata of {len} bytes (its keys and values, and {ENTRY_OVERHEAD} per entry) \
                 exceeds the limit of {max} bytes (max_metadata_size)"
            ),
        }
    }
}

impl From<&str> for HeaderError {
    fn from(reason: &str) -> HeaderError {
        HeaderError::Malformed(reason.to_owned())
    }
}

impl HeaderError {
    /// The status a server answers with: RESOURCE_EXHAUSTED for metadata over the limit,
    /// INVALID_ARGUMENT (`what`: what was bad) otherwise.
    pub(crate) fn status(&self, what: &str) -> Status {
        match self {
            HeaderError::Malformed(reason) => Status::invalid_argument(format!("{what}: {reason}")),
            too_large => Status::resource_exhausted(too_large.to_string()),
        }
    }
}

/// Splits an extension header off `content` (which [`has_prefix`]): the header and the fRPC
/// content behind it. Unknown field types are skipped; a truncated or malformed header is an
/// error (never a panic), and so is a METADATA field over `max_metadata` bytes, refused before
/// it is parsed.
pub(crate) fn split(content: &Bytes, max_metadata: usize) -> Result<(Header, Bytes), HeaderError> {
    let mut header = Header::default();
    let mut at = 1;
    loop {
        let kind = *content
            .get(at)
            .ok_or("extension header: truncated before its end")?;
        at += 1;
        if kind == FIELD_END {
            return Ok((header, content.slice(at..)));
        }
        let len = content
            .get(at..at + 4)
            .ok_or("extension header: truncated field length")?;
        let len = u32::from_be_bytes(len.try_into().map_err(|_| "bad length")?) as usize;
        at += 4;
        let value = content
            .get(at..at.checked_add(len).ok_or("extension header: field too long")?)
            .ok_or("extension header: truncated field")?;
        match kind {
            FIELD_TIMEOUT => {
                let ms: [u8; 4] = value.try_into().map_err(|_| "extension header: bad timeout")?;
                header.timeout = Some(Duration::from_millis(u64::from(u32::from_be_bytes(ms))));
            }
            FIELD_STATUS => {
                let [code] = value else {
                    return Err("extension header: bad status field".into());
                };
                // An unknown (newer) code reads as Unknown.
                header.code = Some(Code::from_u8(*code).unwrap_or(Code::Unknown));
            }
            FIELD_METADATA if len > max_metadata => {
                return Err(HeaderError::MetadataTooLarge {
                    len,
                    max: max_metadata,
                });
            }
            FIELD_METADATA => header.metadata = Some(parse_metadata(value, max_metadata)?),
            FIELD_OPEN => {
                let window = Window::read(value).ok_or("extension header: bad open field")?;
                header.open = Some(window);
            }
            _ => {} // a later version's field
        }
        at += len;
    }
}

/// What each metadata entry counts against `max_metadata_size` beyond its key and value: as
/// HTTP/2 counts a header list (RFC 9113 §6.5.2, which gRPC's limits follow). An entry's wire
/// form takes 5 bytes more than its key and value, its parsed form some 90 (a `String` key and
/// its place in the list): without this, a block of many empty entries would cost more than
/// ten times its size once parsed.
pub(crate) const ENTRY_OVERHEAD: usize = 32;

/// What a metadata entry counts against `max_metadata_size` (see [`ENTRY_OVERHEAD`]).
pub(crate) fn metadata_size(key: &str, value: &[u8]) -> usize {
    key.len() + value.len() + ENTRY_OVERHEAD
}

/// Reads a METADATA field's entries, in time linear in its size (a key sent twice keeps its
/// first place and its last value, as [`Metadata::insert`] would); entries over `max` in all
/// (counted by [`metadata_size`]) are refused. The values are copied out of `block`, which is a
/// slice of the connection's read buffer: held by a call or stream for its whole life, a slice
/// would keep that buffer's whole allocation (64 KiB and more) alive.
fn parse_metadata(block: &[u8], max: usize) -> Result<Metadata, HeaderError> {
    let value = Bytes::copy_from_slice(block);
    let mut entries: Vec<(String, Bytes)> = Vec::new();
    let mut places: HashMap<String, usize> = HashMap::new();
    let (mut at, mut size) = (0, 0);
    while at < value.len() {
        let key_len = usize::from(value[at]);
        at += 1;
        let key = value.get(at..at + key_len).ok_or("metadata: truncated key")?;
        let key = std::str::from_utf8(key).map_err(|_| "metadata: key is not ASCII")?;
        at += key_len;
        let len = value.get(at..at + 4).ok_or("metadata: truncated value length")?;
        let len = u32::from_be_bytes(len.try_into().map_err(|_| "bad length")?) as usize;
        at += 4;
        let end = at.checked_add(len).filter(|end| *end <= value.len());
        let end = end.ok_or("metadata: truncated value")?;
        let entry = value.slice(at..end);
        size += metadata_size(key, &entry);
        if size > max {
            return Err(HeaderError::MetadataTooLarge { len: size, max });
        }
        Metadata::check_raw(key, &entry).map_err(|err| HeaderError::Malformed(err.to_string()))?;
        match places.get(key) {
            Some(&place) => entries[place].1 = entry,
            None => {
                places.insert(key.to_owned(), entries.len());
                entries.push((key.to_owned(), entry));
            }
        }
        at = end;
    }
    Ok(Metadata::from_checked(entries))
}

/// Negotiation as the client sees it. It starts pending; the server's ACCEPT makes it
/// accepted, and a PONG arriving before any ACCEPT makes it plain (an frpc server answers the
/// OFFER before it answers any PING sent after it; a Go server never answers it).
#[derive(Debug)]
pub(crate) struct Negotiation {
    /// `RESOLVED` once known, with the accepted bits below it.
    state: AtomicU32,
    resolved: Notify,
    probed: AtomicBool,
    /// The bits offered (0: no offer).
    offered: u32,
}

const RESOLVED: u32 = 1 << 31;

impl Negotiation {
    /// Pending when the client offers `offer` (some bits), plain (resolved, nothing accepted)
    /// when it offers nothing.
    pub(crate) fn new(offer: u32) -> Negotiation {
        Negotiation {
            state: AtomicU32::new(if offer != 0 { 0 } else { RESOLVED }),
            resolved: Notify::new(),
            probed: AtomicBool::new(offer == 0),
            offered: offer,
        }
    }

    /// Whether this client offered extensions (then any reply may carry a header).
    pub(crate) fn offered(&self) -> bool {
        self.offered != 0
    }

    /// The accepted extensions (none while pending).
    pub(crate) fn accepted(&self) -> u32 {
        self.state.load(Ordering::Acquire) & !RESOLVED
    }

    /// Whether the answer (or its absence) is known.
    pub(crate) fn is_resolved(&self) -> bool {
        self.state.load(Ordering::Acquire) & RESOLVED != 0
    }

    /// The server's ACCEPT arrived. A second one is ignored; one after a PONG (a server that
    /// answers PINGs ahead of its other packets, as Go's read loop would) still counts, for the
    /// calls that start from then on.
    pub(crate) fn accept(&self, bits: u32) {
        if self.offered == 0 {
            return;
        }
        // Only what was offered: a server accepting more is not believed.
        let state = RESOLVED | (bits & self.offered);
        let updated = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
                (current & !RESOLVED == 0).then_some(state)
            });
        if updated.is_ok() {
            self.resolved.notify_waiters();
        }
    }

    /// A PONG arrived: if no ACCEPT came before it, the server ignored the offer.
    pub(crate) fn pong(&self) {
        if self
            .state
            .compare_exchange(0, RESOLVED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.resolved.notify_waiters();
        }
    }

    /// Whether this call should send a PING to learn the answer (once per connection).
    pub(crate) fn take_probe(&self) -> bool {
        !self.probed.swap(true, Ordering::AcqRel)
    }

    /// Waits until the answer is known.
    pub(crate) async fn resolved(&self) {
        crate::notify::until(&self.resolved, || self.is_resolved()).await
    }

    /// Unblocks waiters when the connection closes (they then fail on the closed connection).
    pub(crate) fn close(&self) {
        self.pong();
    }
}

/// A server call's extension state (only on connections that negotiated extensions).
#[derive(Debug, Default)]
pub(crate) struct CallState {
    /// Fires when the client cancels the call or its deadline passes ([`CallState::cancel`]).
    token: CancellationToken,
    /// Set just before `token` fires: what a streamed message checks, without the token's
    /// lock (it was a third of flow control's extra cost per message).
    cancelled: AtomicBool,
    /// When the client stops waiting.
    pub(crate) deadline: Option<tokio::time::Instant>,
    /// The request metadata.
    pub(crate) metadata: Metadata,
    /// What the handler sets for the reply.
    pub(crate) response: Mutex<Option<Metadata>>,
    /// Whether response metadata reaches the client: an fRPC stream's end carries it only to
    /// a client that took the metadata extension (`Context::set_response_metadata` says so).
    pub(crate) carries_response: bool,
}

impl CallState {
    /// The state of a call with `header`.
    pub(crate) fn new(header: Header) -> CallState {
        let deadline = header
            .timeout
            .map(|timeout| tokio::time::Instant::now() + timeout);
        CallState::with(deadline, header.metadata.unwrap_or_default())
    }

    /// The state of a call that ends at `deadline` (if any), with request `metadata`.
    pub(crate) fn with(deadline: Option<tokio::time::Instant>, metadata: Metadata) -> CallState {
        CallState {
            token: CancellationToken::new(),
            cancelled: AtomicBool::new(false),
            deadline,
            metadata,
            response: Mutex::new(None),
            carries_response: true,
        }
    }

    /// The state of an fRPC stream with `header`, whose end carries the response metadata
    /// when `carries_response` (the client took the metadata extension).
    pub(crate) fn for_stream(header: Header, carries_response: bool) -> CallState {
        CallState {
            carries_response,
            ..CallState::new(header)
        }
    }

    /// Cancels the call: its handler's `Context::cancelled` fires, its streams stop sending.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.token.cancel();
    }

    /// Whether the call was cancelled (an atomic load).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Resolves once the call is cancelled.
    pub(crate) fn cancelled(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }

    /// Cancels the call when dropped, unless disarmed first (a call whose future is dropped
    /// before it finishes: tasks its handler spawned see the cancellation).
    #[cfg(feature = "grpc")]
    pub(crate) fn cancel_on_drop(self: &Arc<Self>) -> CancelOnDrop {
        CancelOnDrop(Some(self.clone()))
    }

    /// Takes the response metadata the handler set.
    pub(crate) fn take_response(&self) -> Option<Metadata> {
        self.response.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Cancels its call when dropped ([`CallState::cancel_on_drop`]).
#[cfg(feature = "grpc")]
#[derive(Debug)]
pub(crate) struct CancelOnDrop(Option<Arc<CallState>>);

#[cfg(feature = "grpc")]
impl CancelOnDrop {
    /// The call finished: dropping the guard no longer cancels it.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

#[cfg(feature = "grpc")]
impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            state.cancel();
        }
    }
}

/// A server call's extension state, as its context holds it: made up front for a call whose
/// header carries a deadline or metadata, and only on demand (when the handler asks for its
/// cancellation, or goes on in a task) for the others, so a call that finishes at once
/// allocates nothing for extensions.
#[derive(Debug, Clone)]
pub(crate) enum CallInfo {
    /// The state, made up front.
    State(Arc<CallState>),
    /// The state, looked up (or made) in the connection's registry under the call's key.
    Lazy { registry: Arc<Registry>, key: u32 },
}

impl CallInfo {
    /// The call's state, made (and registered) now if it is lazy.
    pub(crate) fn state(&self) -> Arc<CallState> {
        match self {
            CallInfo::State(state) => state.clone(),
            CallInfo::Lazy { registry, key } => registry.state(*key),
        }
    }

    /// The deadline, if the header had one.
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        match self {
            CallInfo::State(state) => state.deadline,
            CallInfo::Lazy { .. } => None,
        }
    }

    /// The request metadata, if the header had some.
    pub(crate) fn metadata(&self) -> Option<&Metadata> {
        match self {
            CallInfo::State(state) => Some(&state.metadata),
            CallInfo::Lazy { .. } => None,
        }
    }

    /// Whether the call was cancelled (never makes the state).
    pub(crate) fn is_cancelled(&self) -> bool {
        match self {
            CallInfo::State(state) => state.is_cancelled(),
            CallInfo::Lazy { registry, key } => registry.is_cancelled(*key),
        }
    }
}

/// The states of one server connection's calls that someone may cancel: calls running in
/// tasks, and lazy calls whose handler asked for their cancellation. CANCEL looks them up here.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    calls: Mutex<IdMap<u32, Arc<CallState>>>,
    /// Entries in `calls`: a call that finished at once looks only at this.
    len: AtomicUsize,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, IdMap<u32, Arc<CallState>>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state registered under `key`, registering a fresh one if there is none.
    pub(crate) fn state(&self, key: u32) -> Arc<CallState> {
        let mut calls = self.lock();
        let state = calls.entry(key).or_insert_with(|| {
            self.len.fetch_add(1, Ordering::Relaxed);
            Arc::new(CallState::new(Header::default()))
        });
        state.clone()
    }

    /// Registers `state` under `key` (a call going on in a task).
    pub(crate) fn insert(&self, key: u32, state: Arc<CallState>) {
        if self.lock().insert(key, state).is_none() {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn is_cancelled(&self, key: u32) -> bool {
        self.lock().get(&key).is_some_and(|state| state.is_cancelled())
    }

    /// The client's CANCEL for `key`.
    pub(crate) fn cancel(&self, key: u32) {
        if let Some(state) = self.lock().get(&key) {
            state.cancel();
        }
    }

    /// The call under `key` finished: forgets its state, if it is `state` (a newer call may
    /// have reused the key once the client let go of the older one) or, with `state` `None`,
    /// whatever is there. Returns the state removed.
    pub(crate) fn finish(&self, key: u32, state: Option<&Arc<CallState>>) -> Option<Arc<CallState>> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut calls = self.lock();
        let ours = calls
            .get(&key)
            .is_some_and(|entry| state.is_none_or(|state| Arc::ptr_eq(entry, state)));
        if !ours {
            return None;
        }
        self.len.fetch_sub(1, Ordering::Relaxed);
        calls.remove(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flag a streamed message checks and the token a handler awaits fire together, and
    /// only on `cancel`.
    #[tokio::test]
    async fn a_cancel_sets_the_flag_and_fires_the_token() {
        let state = CallState::new(Header::default());
        assert!(!state.is_cancelled());
        assert!(!state.token.is_cancelled());
        state.cancel();
        assert!(state.is_cancelled());
        state.cancelled().await; // resolves: the token fired
    }

    /// A guard dropped while armed cancels its call; a disarmed one leaves it alone.
    #[cfg(feature = "grpc")]
    #[tokio::test]
    async fn a_dropped_guard_cancels_unless_disarmed() {
        let dropped = Arc::new(CallState::default());
        drop(dropped.cancel_on_drop());
        assert!(dropped.is_cancelled());
        dropped.cancelled().await;
        let finished = Arc::new(CallState::default());
        finished.cancel_on_drop().disarm();
        assert!(!finished.is_cancelled());
        assert!(!finished.token.is_cancelled());
    }

    /// Metadata values are copied out of the packet they came in: a slice would keep the
    /// connection's read buffer alive as long as the call holds its metadata.
    #[test]
    fn metadata_values_do_not_share_the_packet() {
        let mut metadata = Metadata::new();
        metadata.insert("user", "ann").unwrap();
        let header = Header {
            metadata: Some(metadata),
            ..Header::default()
        };
        let content = header.encode(&[0x0a; 1000]);
        let (header, _) = split(&content, 8192).unwrap();
        let metadata = header.metadata.unwrap();
        let value = metadata.get("user").unwrap();
        assert_eq!(value, "ann");
        let packet = content.as_ptr_range();
        assert!(
            !packet.contains(&value.as_ptr()),
            "the value is a slice of the packet"
        );
    }

    #[test]
    fn header_round_trips() {
        let mut metadata = Metadata::new();
        metadata.insert("user", "ann").unwrap();
        metadata.insert_bin("trace-bin", vec![0u8, 255]).unwrap();
        let header = Header {
            timeout: Some(Duration::from_micros(1500)),
            metadata: Some(metadata.clone()),
            code: Some(Code::NotFound),
            open: Some(Window {
                messages: 7,
                bytes: Some(65_536),
            }),
        };
        let content = header.encode(&[8, 0]);
        assert!(has_prefix(&content));
        let (back, body) = split(&content, usize::MAX).unwrap();
        assert_eq!(back.timeout, Some(Duration::from_millis(2)));
        assert_eq!(back.metadata, Some(metadata));
        assert_eq!(back.code, Some(Code::NotFound));
        assert_eq!(
            back.open,
            Some(Window {
                messages: 7,
                bytes: Some(65_536)
            })
        );
        assert_eq!(&body[..], &[8, 0]);
    }

    #[test]
    fn exact_bytes() {
        let header = Header {
            timeout: Some(Duration::from_millis(250)),
            ..Header::default()
        };
        assert_eq!(
            hex(&header.encode(&[0x08, 0x00])),
            "fe 01 00 00 00 04 00 00 00 fa 00 08 00"
        );
        assert_eq!(hex(&hello(OFFER, SUPPORTED).content), "01 00 00 07 ff");
        assert_eq!(hex(&hello(OFFER, supported(false)).content), "01 00 00 07 ef");
        assert_eq!(hex(&cancel(10, 7).content), "00 0a 00 07");
        let messages = |messages| Window {
            messages,
            bytes: None,
        };
        assert_eq!(
            hex(&stream_window(CREDIT, 1, messages(512)).content),
            "00 01 00 00 02 00"
        );
        let both = Window {
            messages: 2,
            bytes: Some(0x8000),
        };
        assert_eq!(
            hex(&stream_window(CREDIT, 1, both).content),
            "00 01 00 00 00 02 00 00 80 00"
        );
        let open = Header {
            open: Some(messages(8)),
            ..Header::default()
        };
        assert_eq!(
            hex(&open.encode(&[0x09, 0x0a])),
            "fe 04 00 00 00 04 00 00 00 08 00 09 0a"
        );
        let open = Header {
            open: Some(Window {
                messages: 8,
                bytes: Some(0x10000),
            }),
            ..Header::default()
        };
        assert_eq!(
            hex(&open.encode(&[0x09, 0x0a])),
            "fe 04 00 00 00 08 00 00 00 08 00 01 00 00 00 09 0a"
        );
    }

    fn hex(bytes: &[u8]) -> String {
        bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Random bytes behind the header byte: an answer, never a panic; a success leaves a body
    /// inside the input.
    #[test]
    fn random_headers_never_panic() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let mut bytes = vec![PREFIX];
            // Small values make plausible types and lengths.
            bytes.extend((0..len).map(|_| match next() % 4 {
                0 => 0,
                1 => (next() % 4) as u8,
                _ => next() as u8,
            }));
            let content = Bytes::from(bytes);
            if let Ok((_, body)) = split(&content, usize::MAX) {
                assert!(body.len() < content.len());
            }
            let _ = parse_hello(&content);
            let _ = parse_cancel(&content);
            let _ = parse_stream_window(&content);
        }
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let mut metadata = Metadata::new();
        metadata.insert("k", "v").unwrap();
        let header = Header {
            timeout: Some(Duration::from_secs(1)),
            metadata: Some(metadata),
            code: Some(Code::Internal),
            open: Some(Window {
                messages: 1,
                bytes: None,
            }),
        };
        let full = header.encode(&[]);
        for len in 1..full.len() {
            assert!(
                split(&full.slice(..len), usize::MAX).is_err(),
                "truncated at {len}"
            );
        }
        assert!(split(&full, usize::MAX).is_ok());
        // Hostile lengths, unknown fields, bad keys.
        for bad in [
            &[0xfe, 2, 0xff, 0xff, 0xff, 0xff][..],
            &[0xfe, 1, 0, 0, 0, 3, 1, 2, 3, 0],
            &[0xfe, 3, 0, 0, 0, 0, 0],
            &[0xfe, 2, 0, 0, 0, 6, 1, b'K', 0, 0, 0, 0, 0],
            &[0xfe, 2, 0, 0, 0, 5, 9, b'k', 0, 0, 0, 0],
        ] {
            assert!(
                split(&Bytes::copy_from_slice(bad), usize::MAX).is_err(),
                "{bad:?}"
            );
        }
        let unknown = Bytes::from_static(&[0xfe, 9, 0, 0, 0, 1, 7, 0, 8, 0]);
        let (header, body) = split(&unknown, usize::MAX).unwrap();
        assert!(header.is_empty());
        assert_eq!(&body[..], &[8, 0]);
        assert_eq!(parse_hello(&[1, 0, 0]), None);
        assert_eq!(parse_hello(&[0, 0, 0, 0, 1]), None);
        assert_eq!(parse_hello(&[2, 0, 0, 0, 1, 99]), Some((2, 1)));
        assert_eq!(parse_cancel(&[0, 10, 0]), None);
        assert_eq!(parse_stream_window(&[0, 1, 0, 0, 0]), None);
        assert!(split(&Bytes::from_static(&[0xfe, 4, 0, 0, 0, 2, 0, 1, 0]), usize::MAX).is_err());
    }
}
