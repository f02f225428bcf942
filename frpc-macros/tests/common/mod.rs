//! The Rust-first equivalent of `proto/capture.proto` (the schema of the Go captures): the
//! same messages, enums and `EchoService`, written as Rust items.
#![allow(dead_code)]

use std::collections::HashMap;

use frpc::{Context, Status, StreamSender, Streaming};

/// `capture.Request`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct Request {
    pub message: String,
    #[frpc(enumeration)]
    pub corpus: Corpus,
}

/// `capture.Request.Corpus`.
#[derive(frpc::Message, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[frpc(name = "capture.Request.Corpus")]
pub enum Corpus {
    #[default]
    Universal,
    Web,
    Images,
    Local,
    News,
    Products,
    Video,
}

/// `capture.Response`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct Response {
    pub message: String,
    pub test: Option<Data>,
}

/// `capture.Test`.
#[derive(frpc::Message, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Test {
    #[default]
    Potato,
    Monkey,
}

/// `capture.Data`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct Data {
    pub message: String,
    #[frpc(enumeration)]
    pub checker: Test,
}

/// `capture.SearchResponse`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct SearchResponse {
    pub results: Vec<SearchResult>,
    pub results2: Vec<SearchResult>,
    pub snippets: Vec<String>,
    pub snippets2: Vec<String>,
}

/// `capture.SearchResponse.Result`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct SearchResult {
    pub url: String,
    pub title: String,
    pub snippets: Vec<String>,
}

/// `capture.StockPrices`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct StockPrices {
    pub prices: HashMap<String, f64>,
}

/// `capture.StockPricesWrapper`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct StockPricesWrapper {
    pub s_prices: Vec<StockPrices>,
}

/// `capture.EchoService`, method for method.
#[frpc::service(package = "capture")]
pub trait EchoService {
    /// Echoes the request's message.
    async fn echo(&self, ctx: &Context, request: Request) -> Result<Response, Status>;
    async fn echo_stream(
        &self,
        ctx: &Context,
        inbound: Streaming<Request>,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status>;
    async fn testy(&self, ctx: &Context, request: SearchResponse) -> Result<StockPricesWrapper, Status>;
    async fn search(
        &self,
        ctx: &Context,
        request: SearchResponse,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status>;
    async fn upload(&self, ctx: &Context, inbound: Streaming<Data>) -> Result<Response, Status>;
}
