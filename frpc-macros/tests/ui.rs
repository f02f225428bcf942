//! Compile-fail tests: unsupported signatures and types give readable errors at the right
//! place. `TRYBUILD=overwrite cargo test -p frpc-macros --test ui` rewrites the `.stderr` files.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
