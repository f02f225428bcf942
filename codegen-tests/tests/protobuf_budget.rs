//! Protobuf decoding keeps polyglot's memory budget (`ConnectionConfig::decode`): a 5 MiB
//! protobuf request of 2.6 million empty repeated entries (`0a 00` each; prost would allocate
//! 36 times its size) is refused with INVALID_ARGUMENT before prost decodes it, and the
//! server's peak memory barely moves. Its own test binary, so the peak is this test's.

use std::time::Duration;

use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::capture::{
    Data, EchoService, EchoServiceServer, Request, Response, SearchResponse, StockPricesWrapper,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Echo;

impl EchoService for Echo {
    async fn echo(&self, _: &Context, request: Request) -> Result<Response, Status> {
        Ok(Response {
            message: request.message,
            test: None,
        })
    }

    async fn echo_stream(
        &self,
        _: &Context,
        _: Streaming<Request>,
        _: StreamSender<Response>,
    ) -> Result<(), Status> {
        Ok(())
    }

    async fn testy(&self, _: &Context, request: SearchResponse) -> Result<StockPricesWrapper, Status> {
        Err(Status::new(format!("decoded {} results", request.results.len())))
    }

    async fn search(&self, _: &Context, _: SearchResponse, _: StreamSender<Response>) -> Result<(), Status> {
        Ok(())
    }

    async fn upload(&self, _: &Context, _: Streaming<Data>) -> Result<Response, Status> {
        Err(Status::unimplemented("not here"))
    }
}

fn peak_memory() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

/// The next non-heartbeat packet (Frisbee v0.11 framing): (id, op, content).
async fn next(stream: &mut TcpStream) -> (u16, u16, Vec<u8>) {
    loop {
        let mut header = [0u8; 10];
        tokio::time::timeout(Duration::from_secs(20), stream.read_exact(&mut header))
            .await
            .expect("a packet")
            .unwrap();
        let len = u32::from_be_bytes(header[6..10].try_into().unwrap()) as usize;
        let mut content = vec![0u8; len];
        stream.read_exact(&mut content).await.unwrap();
        let (id, op) = (
            u16::from_be_bytes([header[2], header[3]]),
            u16::from_be_bytes([header[4], header[5]]),
        );
        if op > frpc::wire::op::PONG {
            return (id, op, content);
        }
    }
}

fn packet(id: u16, op: u16, content: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00, 0x0f];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&op.to_be_bytes());
    out.extend_from_slice(&(content.len() as u32).to_be_bytes());
    out.extend_from_slice(content);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amplifying_protobuf_request_is_refused_within_the_budget() {
    let bound = frpc::Server::builder()
        .add_service(EchoServiceServer::new(Echo))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // Offer cancellation, deadlines, codes, metadata and protobuf.
    stream
        .write_all(&packet(1, 0xFFFF, &[1, 0, 0, 0, 0x1f]))
        .await
        .unwrap();
    assert_eq!(next(&mut stream).await.0, 2, "ACCEPT");

    // A small protobuf Testy with two results decodes (the handler reports what it got).
    let small = [0xfd, 0x0a, 0x02, 0x0a, 0x00, 0x0a, 0x00];
    stream.write_all(&packet(3, 12, &small)).await.unwrap();
    let (_, _, reply) = next(&mut stream).await;
    assert!(String::from_utf8_lossy(&reply).contains("decoded 2 results"));

    let mut flood = vec![0xfd];
    flood.extend([0x0a, 0x00].repeat(2_600_000));
    let before = peak_memory();
    stream.write_all(&packet(5, 12, &flood)).await.unwrap();
    let (id, op, reply) = next(&mut stream).await;
    let growth = peak_memory().saturating_sub(before);
    assert_eq!((id, op), (5, 12));
    // INVALID_ARGUMENT (3), then the decode error naming the memory budget.
    assert_eq!(reply[..8], [0xfe, 0x03, 0, 0, 0, 1, 3, 0]);
    let text = String::from_utf8_lossy(&reply);
    assert!(text.contains("memory"), "{text}");
    // The request itself (5 MiB, read into the buffer) plus little else.
    assert!(growth <= 64 << 20, "the server grew by {} MiB", growth >> 20);
}
