//! `bytes(["."])` plus attributes: `bytes` fields are `bytes::Bytes`, and the extra derive on
//! `kitchen.Inner` is there.
use frpc::codegen::Bytes;
use frpc_codegen_tests::bytes::kitchen;

fn main() {
    let edge = kitchen::Edge { blob: Bytes::from_static(b"zero-copy"), ..Default::default() };
    assert_eq!(&edge.blob[..], b"zero-copy");
    let (a, b) = (kitchen::Inner::default(), kitchen::Inner::default());
    assert!(a.partial_cmp(&b).is_some(), "#[derive(PartialOrd)] from type_attribute");
}
