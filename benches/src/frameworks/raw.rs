//! The reference: plain tokio speaking the same 10-byte header (`magic | id | op | len`) with no
//! RPC layer. The server reads whatever arrived and writes every whole packet back as it is (same
//! id and op), batching one read's packets into one write; the client pipelines its `inflight`
//! packets on one socket and one task. What it reaches is the limit of the machine. Its
//! content is what the frpc client sends for the same message: the polyglot `Request` (op
//! [`OP`]) or, for the bytes payload, the polyglot `BlobRequest` (op [`BLOB_OP`]).
//!
//! A second echo, [`Echo::Messages`], decodes each request and encodes its response with
//! frpc-wire's polyglot codec and the generated types, as frpc's server does, and nothing else:
//! the message's own work without an RPC layer, the reference for what frpc's server adds.

use std::collections::VecDeque;
use std::net::SocketAddr;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use frpc::codegen::Message as _;

use crate::frameworks::{BLOB_OP, OP, frpc::pb};
use crate::workload::{Body, Limit, Outcome};

/// What the echo does with the packets it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// Writes every whole packet back as it came, undecoded: the machine's limit.
    Bytes,
    /// Decodes each request (`Request` or `BlobRequest`, polyglot) into its generated type and
    /// writes back the encoded `Response` or `BlobResponse` of its content, one write per read:
    /// the work frpc's server does on the message, with no RPC layer around it.
    Messages,
}

/// Echoes every whole packet back on every accepted connection, until accepting fails.
pub async fn serve(listener: TcpListener, framing: frpc::Framing, echo: Echo) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        match echo {
            Echo::Bytes => tokio::spawn(echo_connection(stream, framing.header_len())),
            Echo::Messages => tokio::spawn(message_echo_connection(stream, framing)),
        };
    }
}

async fn echo_connection(mut stream: TcpStream, header: usize) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // The length is the header's last four bytes, in either framing.
        let mut whole = 0;
        while buf.len() >= whole + header {
            let at = whole + header - 4;
            let len = u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
            if buf.len() < whole + header + len {
                buf.reserve(whole + header + len - buf.len());
                break;
            }
            whole += header + len;
        }
        if whole > 0 && stream.write_all(&buf.split_to(whole)).await.is_err() {
            return;
        }
    }
}

/// [`Echo::Messages`] on one connection: the replies to one read's whole packets go out in one
/// write. A packet that does not parse ends the connection; a request that does not decode, or
/// to another operation, gets no reply.
async fn message_echo_connection(mut stream: TcpStream, framing: frpc::Framing) {
    let header_len = framing.header_len();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut out = BytesMut::with_capacity(64 * 1024);
    loop {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        loop {
            let header = match frpc_wire::Header::parse(framing, &buf) {
                Ok(Some(header)) => header,
                Ok(None) => break,
                Err(_) => return,
            };
            let whole = header_len + header.len as usize;
            if buf.len() < whole {
                buf.reserve(whole - buf.len());
                break;
            }
            // A shared slice of the read buffer, as frpc's reader hands a packet on.
            let mut content = buf.split_to(whole).freeze();
            content.advance(header_len);
            answer(framing, header, &content, &mut out);
        }
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
    }
}

/// Decodes the request `content` of the packet `header` and appends the reply to `out`.
fn answer(framing: frpc::Framing, header: frpc_wire::Header, content: &Bytes, out: &mut BytesMut) {
    match header.op {
        OP => {
            if let Ok(request) = pb::Request::from_polyglot(content) {
                let response = pb::Response {
                    message: super::echo(request.message),
                };
                put_reply(framing, header, &response, out);
            }
        }
        BLOB_OP => {
            if let Ok(request) = pb::BlobRequest::from_polyglot(content) {
                let response = pb::BlobResponse {
                    data: super::echo(request.data),
                };
                put_reply(framing, header, &response, out);
            }
        }
        _ => {}
    }
}

/// Appends `message` in polyglot under the id and operation of the request `header`.
fn put_reply(
    framing: frpc::Framing,
    header: frpc_wire::Header,
    message: &impl frpc::codegen::Message,
    out: &mut BytesMut,
) {
    let len = message.polyglot_len();
    out.reserve(framing.header_len() + len);
    frpc_wire::Header {
        id: header.id,
        op: header.op,
        len: len as u32,
    }
    .encode(framing, out);
    message.encode_polyglot(out);
}

/// One socket speaking the bare framing.
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    framing: frpc::Framing,
    buf: Vec<u8>,
}

/// The operation and content of a request carrying `body`, byte for byte what the frpc
/// client sends: the polyglot `Request` to `Benchmark` or `BlobRequest` to `Blob`.
pub fn request(body: &Body) -> (u16, Bytes) {
    match body {
        Body::Text(message) => {
            let request = pb::Request {
                message: message.clone(),
            };
            (OP, request.to_polyglot())
        }
        Body::Data(data) => (BLOB_OP, pb::BlobRequest { data: data.clone() }.to_polyglot()),
    }
}

/// Finds packet boundaries in the byte stream without copying content: the header being read
/// and how much content of the current packet is still to come.
#[derive(Debug)]
struct Splitter {
    framing: frpc::Framing,
    /// The operation of the replies counted.
    op: u16,
    header: Vec<u8>,
    /// Content bytes of the current packet not yet seen.
    rest: usize,
    /// Whether the current packet is a reply (operation `op`); others, like an frpc server's
    /// heartbeat PINGs, are skipped.
    reply: bool,
}

impl Splitter {
    fn new(framing: frpc::Framing, op: u16) -> Splitter {
        Splitter {
            framing,
            op,
            header: Vec::with_capacity(framing.header_len()),
            rest: 0,
            reply: false,
        }
    }

    /// Consumes `bytes`; returns how many replies they completed.
    fn replies(&mut self, mut bytes: &[u8]) -> usize {
        let mut done = 0;
        while !bytes.is_empty() {
            if self.rest > 0 {
                let n = self.rest.min(bytes.len());
                (self.rest, bytes) = (self.rest - n, &bytes[n..]);
                done += usize::from(self.rest == 0 && self.reply);
                continue;
            }
            let n = (self.framing.header_len() - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if let Some(header) = frpc_wire::Header::parse(self.framing, &self.header).expect("raw framing") {
                self.header.clear();
                (self.rest, self.reply) = (header.len as usize, header.op == self.op);
                done += usize::from(self.rest == 0 && self.reply);
            }
        }
        done
    }
}

impl Client {
    /// Connects to `addr` with TCP_NODELAY.
    pub async fn connect(addr: SocketAddr, framing: frpc::Framing) -> Result<Client, String> {
        let connected = TcpStream::connect(addr).await.and_then(|stream| {
            stream.set_nodelay(true)?;
            Ok(stream)
        });
        let stream = connected.map_err(|e| format!("the raw client cannot connect to {addr}: {e}"))?;
        Ok(Client {
            stream,
            framing,
            buf: vec![0; 256 * 1024],
        })
    }

    /// Keeps `inflight` packets outstanding. The server answers in order (the raw echo, or an frpc
    /// server with inline handlers), so a FIFO of send times gives each reply its latency; the
    /// replies one read completes are replaced with one write. Paced, the client's `inflight`
    /// slots share one schedule of `inflight` starts per interval, and a write waits until the
    /// last of its packets is due.
    pub async fn drive(&mut self, body: &Body, inflight: usize, limit: Limit) -> Outcome {
        let (op, content) = request(body);
        let mut packet = BytesMut::new();
        frpc_wire::Header {
            id: 1,
            op,
            len: content.len() as u32,
        }
        .encode(self.framing, &mut packet);
        packet.put_slice(&content);
        let len = packet.len();
        let batch = packet.repeat(inflight);
        let mut budget = limit.calls.saturating_mul(inflight as u64);
        let mut outcome = Outcome::new();
        let mut sent = VecDeque::with_capacity(inflight);
        let mut splitter = Splitter::new(self.framing, op);
        let (mut reader, mut writer) = self.stream.split();

        // A call starts before its write, as an frpc call's clock starts before the call: the
        // write on loopback carries the packet all the way into the server's socket.
        let first = inflight.min(budget as usize);
        let mut now = Instant::now();
        let mut pacer = limit.pacer(inflight, now);
        if let Some(pacer) = pacer.as_mut() {
            now = pacer.wait(first as u32, now).await;
        }
        sent.extend(std::iter::repeat_n(now, first));
        writer.write_all(&batch[..first * len]).await.expect("raw write");
        budget -= first as u64;
        while !sent.is_empty() {
            let n = reader.read(&mut self.buf).await.expect("raw read");
            assert!(n > 0, "the raw server closed the connection");
            let done = splitter.replies(&self.buf[..n]);
            assert!(done <= sent.len(), "more replies than requests");
            if done == 0 {
                continue;
            }
            now = Instant::now();
            for started in sent.drain(..done) {
                limit.window.record_at(started, now, &mut outcome);
            }
            let mut again = done.min(budget as usize);
            if let (Some(pacer), true) = (pacer.as_mut(), again > 0) {
                now = pacer.wait(again as u32, now).await;
            }
            if now >= limit.window.end {
                again = 0;
            }
            if again > 0 {
                sent.extend(std::iter::repeat_n(now, again));
                writer.write_all(&batch[..again * len]).await.expect("raw write");
                budget -= again as u64;
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitter_counts_replies_across_any_cut_and_skips_pings() {
        let mut stream = BytesMut::new();
        for (op, len) in [(OP, 3), (frpc_wire::op::PING, 0), (BLOB_OP, 2), (OP, 0), (OP, 5)] {
            let header = frpc_wire::Header { id: 1, op, len };
            header.encode(frpc::Framing::Frisbee, &mut stream);
            stream.put_bytes(b'x', len as usize);
        }
        for cut in 0..=stream.len() {
            let mut splitter = Splitter::new(frpc::Framing::Frisbee, OP);
            let done = splitter.replies(&stream[..cut]) + splitter.replies(&stream[cut..]);
            assert_eq!(done, 3, "cut at {cut}");
        }
        let mut blobs = Splitter::new(frpc::Framing::Frisbee, BLOB_OP);
        assert_eq!(blobs.replies(&stream), 1);
    }

    /// The decoding echo's reply to a request is the generated response of its content under
    /// the request's id and operation, in either framing; a request that does not decode, or to
    /// another operation, gets none.
    #[test]
    fn the_decoding_echo_answers_with_the_encoded_response() {
        for framing in [frpc::Framing::Frisbee, frpc::Framing::Legacy] {
            let (op, content) = request(&Body::Text("héllo".into()));
            let mut out = BytesMut::new();
            answer(
                framing,
                frpc_wire::Header { id: 7, op, len: 0 },
                &content,
                &mut out,
            );
            let expected = pb::Response {
                message: "héllo".into(),
            }
            .to_polyglot();
            let header = frpc_wire::Header::parse(framing, &out).unwrap().unwrap();
            assert_eq!(
                (header.id, header.op, header.len as usize),
                (7, OP, expected.len())
            );
            assert_eq!(&out[framing.header_len()..], &expected[..]);

            let data = Bytes::from_static(b"\x00\xffblob");
            let (op, content) = request(&Body::Data(data.clone()));
            out.clear();
            answer(
                framing,
                frpc_wire::Header { id: 8, op, len: 0 },
                &content,
                &mut out,
            );
            let expected = pb::BlobResponse { data }.to_polyglot();
            assert_eq!(&out[framing.header_len()..], &expected[..]);

            out.clear();
            let garbage = Bytes::from_static(b"\x08\x00\x0a\x7f");
            answer(
                framing,
                frpc_wire::Header {
                    id: 9,
                    op: OP,
                    len: 0,
                },
                &garbage,
                &mut out,
            );
            answer(
                framing,
                frpc_wire::Header {
                    id: 9,
                    op: 99,
                    len: 0,
                },
                &content,
                &mut out,
            );
            assert!(out.is_empty(), "{out:?}");
        }
    }

    #[test]
    fn requests_are_what_the_frpc_client_sends() {
        use frpc::codegen::{Decoder, Envelope, decode_envelope};
        let data = Bytes::from_static(b"\x00\xffblob");
        let (op, content) = request(&Body::Data(data.clone()));
        assert_eq!(op, BLOB_OP);
        match decode_envelope::<pb::BlobRequest>(&mut Decoder::from_bytes(&content)) {
            Ok(Envelope::Message(decoded)) => assert_eq!(decoded.data, data),
            other => panic!("not a BlobRequest: {other:?}"),
        }
        let (op, content) = request(&Body::Text("text".into()));
        assert_eq!(op, OP);
        assert_eq!(
            content,
            pb::Request {
                message: "text".into()
            }
            .to_polyglot()
        );
    }
}
