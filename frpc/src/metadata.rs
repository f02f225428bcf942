//! [`Metadata`]: key/value pairs sent beside a call between frpc peers that negotiated
//! extensions (auth tokens, request ids, tracing context), like tonic's `MetadataMap`.
//! Imports only the leaf `status`.

use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::status::Error;

/// The longest key accepted, in bytes (a key's length travels as one byte).
pub const MAX_KEY_LEN: usize = 255;

/// Request or response metadata: keys are lowercase ASCII (`a-z`, `0-9`, `-`, `_`, `.`); a key
/// ending in `-bin` holds bytes ([`Metadata::insert_bin`]), any other key printable ASCII text
/// ([`Metadata::insert`]), as in gRPC. One value per key (inserting again replaces it); the
/// order of insertion is kept. Lookups ([`get`](Metadata::get), [`get_bin`](Metadata::get_bin),
/// [`contains_key`](Metadata::contains_key), [`remove`](Metadata::remove)) ignore ASCII case,
/// as tonic's do.
///
/// Metadata travels only between frpc peers that negotiated extensions (see
/// `docs/extensions.md`); to a Go fRPC peer it is not sent and the call goes ahead without it,
/// unless `ClientConfig::strict_metadata` is set (then the call fails with
/// [`Error::Metadata`]).
///
/// ```
/// let mut md = frpc::Metadata::new();
/// md.insert("authorization", "Bearer 42")?;
/// md.insert_bin("trace-bin", vec![0u8, 1, 2])?;
/// assert_eq!(md.get("authorization"), Some("Bearer 42"));
/// assert_eq!(md.get("Authorization"), Some("Bearer 42")); // lookups ignore case
/// assert_eq!(md.get_bin("trace-bin"), Some(&[0u8, 1, 2][..]));
/// assert!(md.insert("Upper", "x").is_err()); // keys are lowercase
/// assert!(md.insert("x-bin", "text").is_err()); // `-bin` keys take bytes
/// assert!(md.insert("note", "tab\there").is_err()); // text is printable ASCII
/// # Ok::<(), frpc::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    entries: Vec<(String, Bytes)>,
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (key, value) in &self.entries {
            match is_binary_key(key) {
                true => map.entry(key, &value),
                false => map.entry(key, &String::from_utf8_lossy(value)),
            };
        }
        map.finish()
    }
}

/// Whether `key` names a binary value (ends in `-bin`, in any case: lookups ignore case).
fn is_binary_key(key: &str) -> bool {
    let key = key.as_bytes();
    key.len() >= 4 && key[key.len() - 4..].eq_ignore_ascii_case(b"-bin")
}

/// Whether a stored key (lowercase) is the one `asked` for: lookups ignore ASCII case, as
/// HTTP's and tonic's do (`get("Authorization")` finds `authorization`).
fn same_key(stored: &str, asked: &str) -> bool {
    stored.eq_ignore_ascii_case(asked)
}

/// Checks a key: 1 to 255 bytes of `a-z 0-9 - _ .`.
fn check_key(key: &str) -> Result<(), Error> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(Error::Metadata(format!(
            "key {key:?} must be 1 to {MAX_KEY_LEN} bytes long"
        )));
    }
    let valid = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.');
    if !key.bytes().all(valid) {
        return Err(Error::Metadata(format!(
            "key {key:?} may hold only lowercase letters, digits, '-', '_' and '.'"
        )));
    }
    Ok(())
}

fn check_text(key: &str, value: &[u8]) -> Result<(), Error> {
    if value.iter().all(|b| (0x20..0x7f).contains(b)) {
        return Ok(());
    }
    Err(Error::Metadata(format!(
        "the value of {key:?} must be printable ASCII (use a key ending in -bin for bytes)"
    )))
}

impl Metadata {
    /// Empty metadata.
    pub fn new() -> Metadata {
        Metadata::default()
    }

    /// Empty metadata, in a `static`.
    pub(crate) const fn new_const() -> Metadata {
        Metadata { entries: Vec::new() }
    }

    /// Sets text `value` for `key` (replacing an earlier value). Fails with
    /// [`Error::Metadata`] for an invalid key, a `-bin` key, or a value that is not printable
    /// ASCII.
    pub fn insert(&mut self, key: &str, value: &str) -> Result<(), Error> {
        check_key(key)?;
        if is_binary_key(key) {
            return Err(Error::Metadata(format!(
                "key {key:?} ends in -bin: set it with insert_bin"
            )));
        }
        check_text(key, value.as_bytes())?;
        self.set(key, Bytes::copy_from_slice(value.as_bytes()));
        Ok(())
    }

    /// Sets binary `value` for `key`, which must end in `-bin`.
    pub fn insert_bin(&mut self, key: &str, value: impl Into<Bytes>) -> Result<(), Error> {
        check_key(key)?;
        if !is_binary_key(key) {
            return Err(Error::Metadata(format!(
                "key {key:?} does not end in -bin: set text with insert"
            )));
        }
        self.set(key, value.into());
        Ok(())
    }

    fn set(&mut self, key: &str, value: Bytes) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key.to_owned(), value)),
        }
    }

    /// The text value of `key` (`None` for a missing or `-bin` key).
    pub fn get(&self, key: &str) -> Option<&str> {
        if is_binary_key(key) {
            return None;
        }
        let value = self.value(key)?;
        // Checked printable ASCII on insert and on decode.
        std::str::from_utf8(value).ok()
    }

    /// The binary value of a `-bin` key.
    pub fn get_bin(&self, key: &str) -> Option<&[u8]> {
        match is_binary_key(key) {
            true => self.value(key),
            false => None,
        }
    }

    fn value(&self, key: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(k, _)| same_key(k, key))
            .map(|(_, value)| &value[..])
    }

    /// Removes `key`; returns whether it was there.
    pub fn remove(&mut self, key: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(k, _)| !same_key(k, key));
        self.entries.len() != before
    }

    /// Whether `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| same_key(k, key))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every key with its raw value (text values as their ASCII bytes), in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.entries.iter().map(|(k, v)| (k.as_str(), &v[..]))
    }

    /// Adds every entry of `other`, replacing values of keys set in both.
    pub fn merge(&mut self, other: &Metadata) {
        for (key, value) in &other.entries {
            self.set(key, value.clone());
        }
    }

    /// What a handle carrying `current` carries once `added` is added to it (the
    /// `with_metadata` of clients and channels).
    pub(crate) fn layered(current: Option<&Arc<Metadata>>, added: Metadata) -> Arc<Metadata> {
        Arc::new(match current {
            None => added,
            Some(current) => {
                let mut merged = Metadata::clone(current);
                merged.merge(&added);
                merged
            }
        })
    }

    /// Checks an entry read from the wire as `insert`/`insert_bin` would.
    pub(crate) fn check_raw(key: &str, value: &[u8]) -> Result<(), Error> {
        check_key(key)?;
        if !is_binary_key(key) {
            check_text(key, value)?;
        }
        Ok(())
    }

    /// Metadata of entries already checked ([`Metadata::check_raw`]) and free of duplicate keys.
    pub(crate) fn from_checked(entries: Vec<(String, Bytes)>) -> Metadata {
        Metadata { entries }
    }
}

/// Where a client handle puts the response metadata of its calls (see
/// `Client::with_response_metadata`): each call through the handle replaces it with what the
/// server sent (`None` when it sent nothing): a unary call when its reply comes, a streaming
/// call when the server's end comes. Cheap to clone; clones share the slot. Give each
/// concurrent call its own slot.
#[derive(Debug, Clone, Default)]
pub struct MetadataSlot {
    slot: Arc<Mutex<Option<Metadata>>>,
}

impl MetadataSlot {
    /// An empty slot.
    pub fn new() -> MetadataSlot {
        MetadataSlot::default()
    }

    /// Takes what the last call left.
    pub fn take(&self) -> Option<Metadata> {
        self.lock().take()
    }

    /// A copy of what the last call left.
    pub fn get(&self) -> Option<Metadata> {
        self.lock().clone()
    }

    pub(crate) fn set(&self, metadata: Option<Metadata>) {
        *self.lock() = metadata;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Metadata>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tonic interceptor reads `"Authorization"`: it finds the key a client sent lowercase.
    #[test]
    fn lookups_ignore_ascii_case() {
        let mut md = Metadata::new();
        md.insert("authorization", "Bearer 42").unwrap();
        md.insert_bin("trace-bin", vec![7u8]).unwrap();
        assert_eq!(md.get("Authorization"), Some("Bearer 42"));
        assert_eq!(md.get("AUTHORIZATION"), Some("Bearer 42"));
        assert_eq!(md.get_bin("Trace-BIN"), Some(&[7u8][..]));
        assert_eq!(md.get("Trace-BIN"), None, "a binary key has no text value");
        assert!(md.contains_key("Trace-Bin"));
        assert!(md.remove("AuthoriZation"));
        assert!(!md.contains_key("authorization"));
        assert!(
            md.insert("Authorization", "x").is_err(),
            "inserted keys stay lowercase"
        );
    }
}
