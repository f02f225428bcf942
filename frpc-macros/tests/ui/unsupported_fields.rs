use std::collections::HashMap;

#[derive(frpc::Message, Default)]
struct Inner {
    n: i32,
}

#[derive(frpc::Message, Default)]
struct Fields {
    small: u16,
    list_of_lists: Vec<Vec<String>>,
    maybe_list: Option<Vec<String>>,
    by_msg: HashMap<Inner, String>,
    borrowed: &'static str,
    #[frpc(enumeration)]
    not_an_enum: u32,
    #[frpc(enumeration = "Inner")]
    number_as_string: String,
    #[frpc(repeated)]
    unknown: u32,
}

#[derive(frpc::Message, Default)]
struct Generic<T> {
    value: T,
}

fn main() {}
