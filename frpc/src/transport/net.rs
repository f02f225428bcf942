//! Dialling and binding with errors that name the address. Transport floor: sockets only.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs, lookup_host};

use crate::status::Error;

/// How long an attempt at one address may go unanswered before the next address is tried
/// beside it: RFC 8305's "Connection Attempt Delay" (Go waits 300 ms). A first address that
/// drops SYNs (a host down, a firewall, an IPv6 route to nowhere) would otherwise take the
/// whole connect timeout and leave the next addresses untried.
const NEXT_ADDRESS_AFTER: Duration = Duration::from_millis(250);

/// Resolves `addr` and connects to the first of its addresses that answers, lookup and
/// attempts all within `limit` (see [`connect_any`]). A name that does not resolve gives
/// [`Error::Io`]; a lookup that takes the whole `limit`, [`Error::Timeout`].
pub(crate) async fn connect(addr: impl ToSocketAddrs, limit: Duration) -> Result<TcpStream, Error> {
    let started = Instant::now();
    let addrs: Vec<SocketAddr> = match tokio::time::timeout(limit, resolve(addr)).await {
        Ok(resolved) => resolved?.collect(),
        Err(_) => return Err(Error::Timeout(limit)),
    };
    connect_any(&addrs, limit, started.elapsed()).await
}

/// Connects to the first of `addrs` that answers, within `limit` of which `spent` is gone
/// already (on the lookup). Attempts are staggered, as in Happy Eyeballs (RFC 8305): each
/// address is tried in the resolver's order, the next one as soon as the last failed or after
/// [`NEXT_ADDRESS_AFTER`] without an answer (less when `limit` is too short for every address
/// to get its turn that way), while the earlier attempts go on; the first connection made wins
/// and the others are dropped. When none connects the error is [`Error::Connect`] naming the
/// last address tried (the last unanswered one when the limit ran out: then the source is of
/// kind `TimedOut`), its source naming the others and why each failed.
pub(crate) async fn connect_any(
    addrs: &[SocketAddr],
    limit: Duration,
    spent: Duration,
) -> Result<TcpStream, Error> {
    let count = u32::try_from(addrs.len()).unwrap_or(u32::MAX).max(1);
    let stagger = NEXT_ADDRESS_AFTER.min(limit / count);
    let mut race = Race::default();
    // `tokio::time::timeout` copes with any duration (a far deadline is clamped).
    let result = tokio::time::timeout(limit.saturating_sub(spent), race.run(addrs, stagger)).await;
    match result {
        Ok(Some(stream)) => Ok(stream),
        Ok(None) => Err(race.error(None)),
        Err(_) => Err(race.error(Some(limit))),
    }
}

/// One attempt of a [`Race`], with the address it was at.
async fn attempt(addr: SocketAddr) -> (SocketAddr, io::Result<TcpStream>) {
    (addr, TcpStream::connect(addr).await)
}

/// Staggered connection attempts, and what they saw: kept outside the timeout around them, so
/// that the error of a timed-out race still names every address.
#[derive(Default)]
struct Race {
    /// Addresses tried that have not answered yet, oldest first.
    waiting: Vec<SocketAddr>,
    /// Addresses that failed, and why, in the order they failed.
    failed: Vec<(SocketAddr, io::Error)>,
}

impl Race {
    /// The first connection made to one of `addrs`, starting one every `stagger` (or as soon
    /// as every attempt under way has failed); `None` when every address failed.
    async fn run(&mut self, addrs: &[SocketAddr], stagger: Duration) -> Option<TcpStream> {
        let mut next = addrs.iter().copied();
        let mut attempts = FuturesUnordered::new();
        loop {
            if attempts.is_empty() {
                let addr = next.next()?;
                attempts.push(self.start(addr));
            }
            // A fresh timer each turn: the stagger counts from the last attempt started or
            // failed.
            tokio::select! {
                Some((addr, result)) = attempts.next() => {
                    self.answered(addr);
                    match result {
                        Ok(stream) => return Some(stream),
                        // Nothing to wait for after a failure: the next address at once.
                        Err(source) => self.failed.push((addr, source)),
                    }
                    if let Some(addr) = next.next() {
                        attempts.push(self.start(addr));
                    }
                }
                () = tokio::time::sleep(stagger), if next.len() > 0 => {
                    if let Some(addr) = next.next() {
                        attempts.push(self.start(addr));
                    }
                }
            }
        }
    }

    /// The attempt at `addr`, noted as waiting for an answer.
    fn start(
        &mut self,
        addr: SocketAddr,
    ) -> impl Future<Output = (SocketAddr, io::Result<TcpStream>)> + use<> {
        self.waiting.push(addr);
        attempt(addr)
    }

    fn answered(&mut self, addr: SocketAddr) {
        if let Some(at) = self.waiting.iter().position(|waiting| *waiting == addr) {
            self.waiting.remove(at);
        }
    }

    /// The error of a race that made no connection: `timed_out` holds the limit when it ran
    /// out. Names the last address tried that has not answered (on a timeout) or that failed,
    /// then the others.
    fn error(mut self, timed_out: Option<Duration>) -> Error {
        let silent =
            |limit: Duration| io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {limit:?}"));
        let (addr, source) = match (timed_out, self.waiting.pop()) {
            (Some(limit), Some(addr)) => (addr, silent(limit)),
            (Some(limit), None) if self.failed.is_empty() => return Error::Timeout(limit),
            _ => match self.failed.pop() {
                Some(last) => last,
                None => return nothing_resolved(),
            },
        };
        let others: Vec<String> = (self.waiting.iter())
            .map(|addr| format!("{addr}: no answer"))
            .chain(self.failed.iter().map(|(addr, err)| format!("{addr}: {err}")))
            .collect();
        let source = match others.is_empty() {
            true => source,
            false => io::Error::new(
                source.kind(),
                format!("{source} (also tried {})", others.join("; ")),
            ),
        };
        Error::Connect { addr, source }
    }
}

/// Resolves `addr` and binds the first address it names that can be bound.
pub(crate) async fn bind(addr: impl ToSocketAddrs) -> Result<TcpListener, Error> {
    let mut last = None;
    for addr in resolve(addr).await? {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(source) => last = Some(Error::Bind { addr, source }),
        }
    }
    Err(last.unwrap_or_else(nothing_resolved))
}

async fn resolve(addr: impl ToSocketAddrs) -> Result<impl Iterator<Item = SocketAddr>, Error> {
    lookup_host(addr).await.map_err(|err| {
        Error::Io(io::Error::new(
            err.kind(),
            // The usual cause besides a wrong name: a URL where frpc takes `host:port`
            // (tonic's `http://…` habit), which the resolver reports as an unknown name.
            format!("cannot resolve the address (frpc takes `host:port`, without a scheme): {err}"),
        ))
    })
}

fn nothing_resolved() -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::InvalidInput,
        "the address resolved to no socket address",
    ))
}
