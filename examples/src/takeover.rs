//! Connection takeover: a client authenticates with an RPC, then both sides turn frpc off and
//! speak a line protocol on the same socket (the server upper-cases every line).
//!
//! The server greets right behind its reply, so the greeting often arrives in the same segment
//! as the reply: it comes back from [`frpc::Client::into_raw`] as unparsed bytes, not lost.

use bytes::BytesMut;
use frpc::{Context, Status};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The code generated from `proto/takeover.proto`.
#[allow(missing_docs)]
pub mod pb {
    frpc::include_proto!("takeover");
}

/// The token the gate accepts.
pub const TOKEN: &str = "open sesame";
/// The first line the server sends after the switch.
pub const GREETING: &[u8] = b"WELCOME TO THE LINE PROTOCOL\n";

/// Authenticates, then hands the connection to [`upper_case_lines`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Gate;

impl pb::Gate for Gate {
    async fn authenticate(&self, ctx: &Context, request: pb::Credentials) -> Result<pb::Ticket, Status> {
        if request.token != TOKEN {
            return Err(Status::new("bad token"));
        }
        let raw = ctx.take_connection()?;
        tokio::spawn(async move {
            match raw.await {
                Ok((stream, unparsed)) => {
                    if let Err(err) = upper_case_lines(stream, unparsed).await {
                        tracing::debug!(error = %err, "line protocol ended");
                    }
                }
                Err(err) => tracing::warn!(error = %err, "takeover failed"),
            }
        });
        Ok(pb::Ticket {
            accepted: true,
            protocol: "upper-case lines".into(),
        })
    }
}

/// The raw protocol: greet, then echo every byte upper-cased until the client closes. Bytes
/// frpc read but did not parse are served first.
pub async fn upper_case_lines(mut stream: TcpStream, unparsed: BytesMut) -> std::io::Result<()> {
    stream.write_all(GREETING).await?;
    stream.write_all(&unparsed.to_ascii_uppercase()).await?;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return stream.shutdown().await;
        }
        buf[..n].make_ascii_uppercase();
        stream.write_all(&buf[..n]).await?;
    }
}

/// Serves the gate on `listener`.
pub async fn serve(listener: TcpListener) -> Result<(), frpc::Error> {
    let server = frpc::Server::builder()
        .add_service(pb::GateServer::new(Gate))
        .build()?;
    server.serve_listener(listener).await
}

/// Reads exactly `out.len()` bytes, first from `unparsed`, then from `stream`.
pub async fn read_exact_after(
    stream: &mut (impl AsyncRead + Unpin),
    unparsed: &mut BytesMut,
    out: &mut [u8],
) -> std::io::Result<()> {
    let take = out.len().min(unparsed.len());
    out[..take].copy_from_slice(&unparsed.split_to(take));
    stream.read_exact(&mut out[take..]).await.map(|_| ())
}

/// Sends `lines` over a taken-over stream and returns what came back (greeting excluded).
pub async fn talk(mut stream: TcpStream, mut unparsed: BytesMut, lines: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut greeting = vec![0u8; GREETING.len()];
    read_exact_after(&mut stream, &mut unparsed, &mut greeting).await?;
    if greeting != GREETING {
        return Err(std::io::Error::other(format!("unexpected greeting {greeting:?}")));
    }
    let (mut reader, mut writer) = stream.split();
    let send = async {
        writer.write_all(lines).await?;
        writer.shutdown().await
    };
    let receive = async {
        let mut echoed = unparsed.to_vec();
        reader.read_to_end(&mut echoed).await?;
        Ok::<_, std::io::Error>(echoed)
    };
    let ((), echoed) = tokio::try_join!(send, receive)?;
    Ok(echoed)
}

/// Connects, authenticates and switches: the socket plus any bytes already read.
pub async fn connect(
    addr: std::net::SocketAddr,
    config: frpc::ClientConfig,
) -> Result<(TcpStream, BytesMut), frpc::Error> {
    let client = frpc::Client::connect_with(addr, config).await?;
    let gate = pb::GateClient::new(client.clone());
    client.arm_takeover();
    let ticket = gate.authenticate(pb::Credentials { token: TOKEN.into() }).await?;
    assert!(ticket.accepted);
    drop(gate);
    client.into_raw().await
}
