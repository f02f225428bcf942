#[derive(frpc::Message, Default)]
struct Point(i32, i32);

fn main() {}
