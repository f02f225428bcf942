//! Authenticate with an RPC, then speak another protocol on the same socket.
//!
//! `cargo run --example takeover`

use frpc_examples::takeover;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(takeover::serve(listener));
    let (stream, unparsed) = takeover::connect(addr, Default::default()).await?;
    println!(
        "authenticated; switched to the raw protocol ({} bytes were already read)",
        unparsed.len()
    );
    let echoed = takeover::talk(stream, unparsed, b"hello over the raw socket\nsecond line\n").await?;
    print!("{}", String::from_utf8_lossy(&echoed));
    Ok(())
}
