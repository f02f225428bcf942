#[derive(frpc::Message, Default)]
#[frpc(protbuf)]
struct Misspelled {
    n: i32,
}

#[derive(frpc::Message, Default)]
#[frpc(protobuf = true)]
struct WithValue {
    n: i32,
}

#[derive(frpc::Message, Clone, Copy, Default)]
#[frpc(protobuf)]
enum Status {
    #[default]
    Unknown,
}

fn main() {}
