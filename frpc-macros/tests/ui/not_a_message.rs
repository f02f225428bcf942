// Fields of types that are not messages (a plain struct, a derived enum without
// `#[frpc(enumeration)]`): the error says what a message is and names the enum attribute.
#[derive(Default)]
struct Plain {
    text: String,
}

#[derive(frpc::Message, Clone, Copy, Default)]
enum Mood {
    #[default]
    Calm,
    Busy,
}

#[derive(frpc::Message, Default)]
struct Msg {
    mood: Mood,
    plain: Plain,
}

fn main() {}
