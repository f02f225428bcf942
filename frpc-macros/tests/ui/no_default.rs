// The derive does not implement `Default`: derive it.
#[derive(frpc::Message)]
struct Msg {
    text: String,
}

fn main() {}
