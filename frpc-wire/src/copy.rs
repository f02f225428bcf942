//! Copies that stay fast wherever the allocator put their buffers.
//!
//! glibc's `memcpy` copies from about 2 KiB up (2,112 bytes on AMD, up to the size of the L2
//! cache there) with `rep movsb`. On AMD Zen processors (the EPYC VMs this project is measured
//! on, with Debian 12's glibc 2.36) that instruction runs 12 to 60 times slower when the
//! destination starts 1 to 31 bytes past the source modulo 4 KiB: a 128 KiB copy takes 50–80 µs
//! instead of 3–4 µs, an 8 KiB one 5–12 µs instead of 0.2. Which distance a decoded string
//! gets depends on where the allocator put the read buffer and the string, so one run of a
//! 128 KiB echo cost the server 110 µs of CPU per call and the next 180. Copied in pieces of
//! under 2 KiB, every piece takes glibc's vector loop, as fast at every distance (2.7–3.5 µs for
//! 128 KiB); elsewhere a single `memcpy` is as fast or faster (at 1 MiB, 15% faster), so the
//! helpers here copy in pieces only toward a destination at such a distance.
//!
//! [`Pieces`] does it for prost, which copies a protobuf `bytes` field held in a `Vec<u8>` one
//! [`Buf::chunk`] at a time.

use bytes::{Buf, BufMut, Bytes};

/// The largest piece copied with one `memcpy` where the distance is short: below 2,048 bytes,
/// the smallest size glibc copies with `rep movsb` on any x86-64 processor.
pub const PIECE: usize = 2048 - 64;

/// Whether a copy of more than [`PIECE`] bytes from `src` to `dst` would be slow in one
/// `memcpy`: the destination lies 1 to 63 bytes past the source modulo 4 KiB (1 to 31 is what
/// was measured slow; the rest of that cache line is margin).
#[inline]
fn short_distance(src: *const u8, dst: *const u8) -> bool {
    let distance = (dst as usize).wrapping_sub(src as usize) % 4096;
    (1..64).contains(&distance)
}

/// `text` in a new `String`, copied in pieces where one copy would be slow.
pub fn to_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_str(&mut out, text);
    out
}

/// `bytes` in a new `Vec`, copied in pieces where one copy would be slow.
pub fn to_vec(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    extend(&mut out, bytes);
    out
}

/// Replaces `out`'s text with `text`, keeping `out`'s allocation where it is large enough.
fn assign_str(out: &mut String, text: &str) {
    out.clear();
    out.reserve(text.len());
    push_str(out, text);
}

/// Below this length simdutf8 hands text to std's validator, and std reads a copy in a
/// string's own (aligned) buffer faster than the same bytes at an odd offset of a packet
/// (byte by byte up to the first aligned word): about 80 instructions less for 32 bytes under
/// callgrind. Shorter text is copied first and validated where it landed.
const SHORT_TEXT: usize = 64;

/// `raw` as a new `String` if it is UTF-8: validated (simdutf8) and copied once.
pub fn utf8_to_string(raw: &[u8]) -> Option<String> {
    match raw.len() < SHORT_TEXT {
        true => String::from_utf8(raw.to_vec()).ok(),
        false => simdutf8::basic::from_utf8(raw).ok().map(to_string),
    }
}

/// Replaces `out`'s text with `raw` if it is UTF-8 (validated by simdutf8, copied once),
/// reusing `out`'s allocation where it is large enough; whether it was. Where it was not, `out`
/// is left empty or as it was.
pub fn assign_utf8(out: &mut String, raw: &[u8]) -> bool {
    if out.capacity() < raw.len() {
        // Nothing to reuse: a new string of the right size (growing one costs more).
        return utf8_to_string(raw).map(|text| *out = text).is_some();
    }
    if raw.len() < SHORT_TEXT {
        let mut bytes = std::mem::take(out).into_bytes();
        bytes.clear();
        bytes.extend_from_slice(raw);
        return String::from_utf8(bytes).map(|text| *out = text).is_ok();
    }
    match simdutf8::basic::from_utf8(raw) {
        Ok(text) => {
            assign_str(out, text);
            true
        }
        Err(_) => false,
    }
}

/// Appends `text` to `out`, which has room for it.
fn push_str(out: &mut String, text: &str) {
    let dst = out.as_ptr().wrapping_add(out.len());
    if text.len() <= PIECE || !short_distance(text.as_ptr(), dst) {
        return out.push_str(text);
    }
    let mut rest = text;
    while !rest.is_empty() {
        // Pieces end on character boundaries (at most 3 bytes back), so each is a `str`.
        let mut end = rest.len().min(PIECE);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&rest[..end]);
        rest = &rest[end..];
    }
}

/// Appends `bytes` to `out`, which has room for them.
fn extend(out: &mut Vec<u8>, bytes: &[u8]) {
    let dst = out.as_ptr().wrapping_add(out.len());
    match bytes.len() > PIECE && short_distance(bytes.as_ptr(), dst) {
        true => bytes.chunks(PIECE).for_each(|piece| out.extend_from_slice(piece)),
        false => out.extend_from_slice(bytes),
    }
}

/// Appends `bytes` to `buf`, in pieces where one copy would be slow. Only a buffer that already
/// has room for all of it is checked (where it will land is known then); one that must grow
/// first gets one copy. (Asking a full `BytesMut` where its room is makes it reserve 64 bytes
/// first; frpc's encoders size their buffers up front, so theirs are never full here.)
#[inline]
pub fn put_slice(buf: &mut impl BufMut, bytes: &[u8]) {
    if bytes.len() > PIECE {
        let room = buf.chunk_mut();
        if room.len() >= bytes.len() && short_distance(bytes.as_ptr(), room.as_mut_ptr()) {
            bytes.chunks(PIECE).for_each(|piece| buf.put_slice(piece));
            return;
        }
    }
    buf.put_slice(bytes)
}

/// A [`Bytes`] read in pieces of at most [`PIECE`] bytes, for prost: it copies a `string` or
/// `Vec<u8>` field out of its input one chunk at a time, and cannot be told where to, so every
/// large copy goes in pieces (as fast as one copy up to the L2 cache's size). `bytes::Bytes`
/// fields still come out as zero-copy slices ([`Buf::copy_to_bytes`] is the inner one's).
#[derive(Debug, Clone)]
pub struct Pieces(pub Bytes);

impl Buf for Pieces {
    #[inline]
    fn remaining(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        &self.0[..self.0.len().min(PIECE)]
    }

    #[inline]
    fn advance(&mut self, n: usize) {
        self.0.advance(n)
    }

    #[inline]
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        self.0.copy_to_bytes(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `content` copied into `backing` so that it starts `distance` bytes before `dst` modulo
    /// 4 KiB: the source a copy toward `dst` would be slow from, for `distance` 1 to 31.
    fn placed<'a>(backing: &'a mut Vec<u8>, dst: *const u8, distance: usize, content: &[u8]) -> &'a [u8] {
        backing.clear();
        backing.resize(content.len() + 4096, 0);
        let want = (dst as usize).wrapping_sub(distance);
        let skip = want.wrapping_sub(backing.as_ptr() as usize) % 4096;
        backing[skip..skip + content.len()].copy_from_slice(content);
        &backing[skip..skip + content.len()]
    }

    #[test]
    fn short_distance_is_one_to_sixty_three_bytes_forward() {
        let base = 0x10_000 as *const u8;
        for (offset, short) in [(0, false), (1, true), (31, true), (63, true), (64, false)] {
            let dst = base.wrapping_add(offset + 3 * 4096);
            assert_eq!(short_distance(base, dst), short, "{offset}");
        }
        // Behind the source is never short: rep movsb copies forward.
        assert!(!short_distance(base, base.wrapping_sub(8)));
    }

    #[test]
    fn copies_are_whole_at_every_distance_and_length() {
        // Multi-byte characters across every piece boundary: each piece must end on one.
        let text: String = "aé€😀".chars().cycle().take(3000).collect();
        for len_cut in [0, 1, PIECE - 1, PIECE, PIECE + 1, text.len()] {
            let mut cut = len_cut.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let part = &text[..cut];
            assert_eq!(to_string(part), part);
            assert_eq!(to_vec(part.as_bytes()), part.as_bytes());
            let mut buf = bytes::BytesMut::with_capacity(part.len() + 16);
            put_slice(&mut buf, part.as_bytes());
            assert_eq!(&buf[..], part.as_bytes());
        }
    }

    #[test]
    fn short_distances_copy_in_pieces_and_stay_whole() {
        // Multi-byte characters across every piece boundary: each piece must end on one.
        let text: String = "aé€😀".chars().cycle().take(10_000).collect();
        let mut backing = Vec::new();
        for distance in [1, 7, 31, 63, 64, 900] {
            let short = distance < 64;

            let mut buf = bytes::BytesMut::with_capacity(text.len());
            let src = placed(
                &mut backing,
                buf.chunk_mut().as_mut_ptr(),
                distance,
                text.as_bytes(),
            );
            assert_eq!(short_distance(src.as_ptr(), buf.chunk_mut().as_mut_ptr()), short);
            put_slice(&mut buf, src);
            assert_eq!(&buf[..], text.as_bytes(), "put_slice at {distance}");

            let mut vec = Vec::with_capacity(text.len());
            let src = placed(&mut backing, vec.as_ptr(), distance, text.as_bytes());
            assert_eq!(short_distance(src.as_ptr(), vec.as_ptr()), short);
            extend(&mut vec, src);
            assert_eq!(vec, text.as_bytes(), "extend at {distance}");

            let mut string = String::with_capacity(text.len());
            let src = placed(&mut backing, string.as_ptr(), distance, text.as_bytes());
            assert_eq!(short_distance(src.as_ptr(), string.as_ptr()), short);
            push_str(&mut string, std::str::from_utf8(src).expect("a copy of text"));
            assert_eq!(string, text, "push_str at {distance}");

            let mut string = String::with_capacity(text.len());
            string.push_str("replaced");
            let src = placed(&mut backing, string.as_ptr(), distance, text.as_bytes());
            assign_str(&mut string, std::str::from_utf8(src).expect("a copy of text"));
            assert_eq!(string, text, "assign_str at {distance}");
        }
    }

    #[test]
    fn text_is_validated_short_and_long() {
        for len in [0, 1, SHORT_TEXT - 1, SHORT_TEXT, SHORT_TEXT + 1, 5_000] {
            // Multi-byte characters up to the end; the last one completes exactly at `len`.
            let text: String = "é€😀a"
                .chars()
                .cycle()
                .scan(0, |n, c| {
                    *n += c.len_utf8();
                    (*n <= len).then_some(c)
                })
                .collect();
            let text = format!("{text}{}", "b".repeat(len - text.len()));
            assert_eq!(
                utf8_to_string(text.as_bytes()).as_deref(),
                Some(text.as_str()),
                "{len}"
            );
            // A string too small to reuse, and one with room (whose allocation is kept).
            let previous = || {
                [
                    String::from("previous"),
                    String::with_capacity(8_000) + "previous",
                ]
            };
            for mut out in previous() {
                let room = out.capacity() >= len;
                let kept = out.as_ptr();
                assert!(assign_utf8(&mut out, text.as_bytes()));
                assert_eq!(out, text);
                assert!(!room || out.as_ptr() == kept, "{len}: the allocation is reused");
            }
            if len > 0 {
                let mut cut = text.as_bytes().to_vec();
                cut.push(0xE2); // the first byte of a three-byte character, and no more
                assert_eq!(utf8_to_string(&cut), None, "{len} + a cut character");
                let mut bad = cut.clone();
                bad[0] = 0xFF;
                for invalid in [cut, bad] {
                    for mut out in previous() {
                        assert!(!assign_utf8(&mut out, &invalid), "{len}: {:?}", &invalid[..1]);
                        assert!(
                            out.is_empty() || out == "previous",
                            "no invalid text is kept: {out:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pieces_give_chunks_of_at_most_a_piece_and_bytes_without_copies() {
        let data = Bytes::from(vec![7u8; 3 * PIECE + 5]);
        let mut pieces = Pieces(data.clone());
        assert_eq!(pieces.chunk().len(), PIECE);
        let mut copied = Vec::new();
        copied.put(&mut pieces.clone());
        assert_eq!(copied, data);
        let head = pieces.copy_to_bytes(PIECE + 1);
        assert_eq!(head.as_ptr(), data.as_ptr(), "a zero-copy slice");
        assert_eq!(pieces.remaining(), 2 * PIECE + 4);
        pieces.advance(2 * PIECE);
        assert_eq!(pieces.chunk(), &[7; 4]);
    }
}
