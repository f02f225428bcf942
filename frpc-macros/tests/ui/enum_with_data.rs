#[derive(frpc::Message, Clone, Copy, Default)]
enum Shape {
    #[default]
    Empty,
    Circle(u32),
    Square { side: u32 },
}

fn main() {}
