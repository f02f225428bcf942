//! Runs Shopify's Toxiproxy for the chaos suite and drives it over its HTTP API: proxies on
//! 127.0.0.1 in front of frpc servers, and toxics (latency, bandwidth, slicer, reset_peer,
//! timeout, slow_close, limit_data) added and removed while calls run through them.
//!
//! The binary is installed by `.ci/setup-toxiproxy` (pinned version) and found at
//! `$FRPC_TOXIPROXY`, else `~/.local/toxiproxy-v2.12.0/server`.
#![deny(missing_docs)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

/// The Toxiproxy version `.ci/setup-toxiproxy` installs.
pub const TOXIPROXY_VERSION: &str = "v2.12.0";

/// Where the Toxiproxy server binary is: `$FRPC_TOXIPROXY`, else the path `.ci/setup-toxiproxy`
/// installs to. Panics with what to run when it is missing (like the interop tests without Go).
pub fn toxiproxy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("FRPC_TOXIPROXY") {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    let path = PathBuf::from(home).join(format!(".local/toxiproxy-{TOXIPROXY_VERSION}/server"));
    assert!(
        path.exists(),
        "Toxiproxy not found at {}: run .ci/setup (or .ci/setup-toxiproxy), or point FRPC_TOXIPROXY at a toxiproxy server binary",
        path.display()
    );
    path
}

/// A running Toxiproxy server, its API on 127.0.0.1 at a free port; killed when dropped.
#[derive(Debug)]
pub struct Toxiproxy {
    api: SocketAddr,
    _child: Child,
}

impl Toxiproxy {
    /// Starts Toxiproxy and waits until its API answers (at most 20 s).
    pub async fn start() -> Toxiproxy {
        // A port the kernel just handed out and released: free unless raced by another process.
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(toxiproxy_binary())
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("toxiproxy starts");
        let api = SocketAddr::from(([127, 0, 0, 1], port));
        let toxiproxy = Toxiproxy { api, _child: child };
        let ready = async {
            // The process has no readiness signal but its listening socket: try until it answers.
            while toxiproxy.request("GET", "/version", None).await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), ready)
            .await
            .expect("toxiproxy's API answers within 20 s");
        toxiproxy
    }

    /// Creates a proxy `name` on a free 127.0.0.1 port in front of `upstream`; returns it.
    pub async fn proxy(&self, name: &str, upstream: SocketAddr) -> Proxy {
        let body =
            json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream.to_string(), "enabled": true});
        let reply = self.call("POST", "/proxies", Some(body)).await;
        let listen = reply["listen"].as_str().expect("the proxy's listen address");
        Proxy {
            api: self.api,
            name: name.to_owned(),
            listen: listen.parse().expect("a socket address"),
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        call(self.api, method, path, body).await
    }

    async fn request(&self, method: &str, path: &str, body: Option<Value>) -> std::io::Result<(u16, String)> {
        request(self.api, method, path, body).await
    }
}

/// One proxy of a [`Toxiproxy`].
#[derive(Debug, Clone)]
pub struct Proxy {
    api: SocketAddr,
    name: String,
    /// Where clients connect.
    pub listen: SocketAddr,
}

impl Proxy {
    /// Adds toxic `name` of `kind` on `stream` ("upstream": client to server, "downstream":
    /// server to client) with `attributes`.
    pub async fn add(&self, name: &str, kind: &str, stream: &str, attributes: Value) {
        let body =
            json!({"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes});
        call(
            self.api,
            "POST",
            &format!("/proxies/{}/toxics", self.name),
            Some(body),
        )
        .await;
    }

    /// Adds the toxic in both directions (names `<name>-up`, `<name>-down`).
    pub async fn add_both(&self, name: &str, kind: &str, attributes: Value) {
        self.add(&format!("{name}-up"), kind, "upstream", attributes.clone())
            .await;
        self.add(&format!("{name}-down"), kind, "downstream", attributes)
            .await;
    }

    /// Removes every toxic of this proxy.
    pub async fn clear(&self) {
        let toxics = call(self.api, "GET", &format!("/proxies/{}/toxics", self.name), None).await;
        for toxic in toxics.as_array().into_iter().flatten() {
            let name = toxic["name"].as_str().unwrap_or_default();
            call(
                self.api,
                "DELETE",
                &format!("/proxies/{}/toxics/{name}", self.name),
                None,
            )
            .await;
        }
    }

    /// Deletes the proxy: its listener and every connection through it are closed.
    pub async fn delete(&self) {
        call(self.api, "DELETE", &format!("/proxies/{}", self.name), None).await;
    }
}

/// One API call; panics on an error status (the suite's setup must work).
async fn call(api: SocketAddr, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, text) = request(api, method, path, body)
        .await
        .expect("toxiproxy API reachable");
    assert!(
        (200..300).contains(&status),
        "toxiproxy {method} {path}: {status} {text}"
    );
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// A minimal HTTP/1.0 exchange (no chunked replies, the connection closes at the end).
async fn request(
    api: SocketAddr,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> std::io::Result<(u16, String)> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut stream = TcpStream::connect(api).await?;
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: {api}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await?;
    let reply = String::from_utf8_lossy(&reply);
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad HTTP reply: {reply}"),
        )
    };
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let (_, text) = reply.split_once("\r\n\r\n").ok_or_else(bad)?;
    Ok((status, text.to_owned()))
}
