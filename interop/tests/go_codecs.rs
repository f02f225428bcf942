//! The Go peers' hand-written message codecs re-encode every message of the real Go captures
//! byte for byte (`interop/go/peer/messages_test.go`), so the interop tests exercise fRPC's
//! actual wire format, not a private dialect.

use frpc_interop::{go, go_dir};

#[test]
fn go_message_codecs_round_trip_the_captures() {
    let output = go(&go_dir().join("peer"))
        .args(["test", "-count=1", "-v", "./..."])
        .output()
        .expect("run go test");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "go test failed:\n{text}");
    assert!(text.contains("--- PASS: TestCapturesRoundTrip"), "{text}");
    assert!(text.contains("--- PASS: TestDecodedCaptureContents"), "{text}");
    // Go's polyglot keeps -0.0, byte for byte as frpc writes it (codegen-tests/tests/values.rs).
    assert!(text.contains("--- PASS: TestNegativeZeroSurvives"), "{text}");
    assert_eq!(
        text.matches("26 messages and 4 stream opens round-trip byte for byte")
            .count(),
        2,
        "both captures (v0.10 and v0.11) must be checked:\n{text}"
    );
}
