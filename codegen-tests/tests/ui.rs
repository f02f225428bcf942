//! Generated code used from another crate, under each builder configuration: what must compile
//! does (`ui/pass_*.rs`), and what a configuration turns off is really gone (`ui/fail_*.rs`).

#[test]
fn builder_configurations() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
