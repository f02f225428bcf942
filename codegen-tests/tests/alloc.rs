//! Memory per input byte, measured: a counting global allocator (hence its own test binary,
//! with a single test) records the peak bytes allocated while decoding.

use frpc::codegen::{BufMut, Bytes, DecodeError, Kind, Message, encode};
use frpc_codegen_tests::capture::SearchResponse;
use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// Peak bytes allocated by `f` beyond what was live when it started.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = ALLOC.current_usage();
    ALLOC.reset_peak_usage();
    let out = f();
    (out, ALLOC.peak_usage() - base)
}

/// A 5 MiB `Testy` request (a `SearchResponse`) whose `results` announce one element per byte
/// left, every one `00`: 72 bytes each in Rust, about 360 MB if believed.
#[test]
fn nil_elements_do_not_inflate_memory() {
    let len = 5 << 20;
    let mut buf = Vec::with_capacity(len);
    buf.put_slice(&[0x08, 0x00]);
    let count = len - buf.len() - 7; // the slice header takes 7 bytes here
    encode::put_slice_header(&mut buf, Kind::Any, count);
    buf.resize(len, 0x00);
    assert_eq!(buf.len(), len);
    let input = Bytes::from(buf);
    let naive = count * size_of::<frpc_codegen_tests::capture::search_response::Result>();
    assert!(naive > 300 << 20, "{naive}");

    let (result, peak) = peak_during(|| SearchResponse::from_polyglot(&input));
    assert!(peak <= 64 << 20, "peak {peak} bytes");
    assert!(
        matches!(result, Err(DecodeError::MemoryLimit { needed, .. }) if needed == naive),
        "{result:?}"
    );

    // A real message of the same size decodes, with memory in proportion.
    let real = SearchResponse {
        snippets: vec!["x".repeat(100); (5 << 20) / 110],
        ..Default::default()
    }
    .to_polyglot();
    let (back, peak) = peak_during(|| SearchResponse::from_polyglot(&real));
    assert_eq!(back.unwrap().snippets.len(), (5 << 20) / 110);
    assert!(peak <= 64 << 20, "peak {peak} bytes");
}
