//! The cluster demo's parts: a tiny `Node` service whose replies name the server that
//! answered, server processes started from the `cluster` binary (`cluster server`), and a load
//! generator that calls through a balanced [`frpc::Channel`] and tallies calls per server.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use frpc::{Channel, Code, Context, Status};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// A request or a reply: the name of the server that answered.
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Name {
    /// The server's name.
    pub value: String,
}

/// One cluster node.
#[frpc::service(package = "cluster")]
pub trait Node {
    /// Replies with the node's name.
    async fn whoami(&self, ctx: &Context, request: Name) -> Result<Name, Status>;
}

struct Named(String);

impl Node for Named {
    async fn whoami(&self, _: &Context, _: Name) -> Result<Name, Status> {
        Ok(Name {
            value: self.0.clone(),
        })
    }
}

/// Serves node `name` on `addr`, printing `LISTENING <addr>` once it accepts.
pub async fn serve(name: &str, addr: &str) -> Result<(), frpc::Error> {
    let bound = frpc::Server::builder()
        .add_service(NodeServer::new(Named(name.to_owned())))
        .bind(addr)
        .await?;
    println!("LISTENING {}", bound.local_addr());
    bound.serve().await
}

/// A node process (`cluster server`), killed when dropped.
#[derive(Debug)]
pub struct Process {
    /// The node's name.
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl Process {
    /// Starts node `name` on `addr` (`127.0.0.1:0`: any free port) from the `cluster` binary
    /// at `exe`, and returns once it listens (it prints its address).
    pub fn spawn(exe: &Path, name: &str, addr: &str) -> std::io::Result<Process> {
        let mut child = Command::new(exe)
            .args(["server", "--name", name, "--addr", addr])
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("LISTENING ")
            .and_then(|addr| addr.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(format!(
                "node {name} did not start: {line:?}"
            )));
        };
        Ok(Process {
            name: name.to_owned(),
            addr,
            child,
        })
    }

    /// Kills the process (SIGKILL: its connections drop with no goodbye) and reaps it.
    pub fn kill(&mut self) -> std::io::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the load has seen so far.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Successful calls per server name.
    pub calls: BTreeMap<String, u64>,
    /// Failed calls: code and message.
    pub errors: Vec<(Code, String)>,
    /// Calls finished (either way) by each worker.
    pub finished: Vec<u64>,
}

impl Tally {
    /// Successful calls answered by `name`.
    pub fn of(&self, name: &str) -> u64 {
        self.calls.get(name).copied().unwrap_or(0)
    }

    /// Successful calls in all.
    pub fn total(&self) -> u64 {
        self.calls.values().sum()
    }
}

/// `workers` tasks calling `Whoami` through a channel back to back, tallying the answers.
#[derive(Debug)]
pub struct Load {
    tally: Arc<Mutex<Tally>>,
    changed: Arc<Notify>,
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts the workers.
    pub fn start(channel: Channel, workers: usize) -> Load {
        let client = NodeClient::new(channel);
        let tally = Arc::new(Mutex::new(Tally {
            finished: vec![0; workers],
            ..Tally::default()
        }));
        let changed = Arc::new(Notify::new());
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..workers)
            .map(|worker| {
                let (client, tally, changed, stop) =
                    (client.clone(), tally.clone(), changed.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let result = client.whoami(Name::default()).await;
                        {
                            let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
                            match result {
                                Ok(name) => *tally.calls.entry(name.value).or_default() += 1,
                                Err(err) => tally.errors.push((err.code(), err.to_string())),
                            }
                            tally.finished[worker] += 1;
                        }
                        changed.notify_waiters();
                    }
                })
            })
            .collect();
        Load {
            tally,
            changed,
            stop,
            tasks,
        }
    }

    /// The tally now.
    pub fn tally(&self) -> Tally {
        self.tally.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until `done` holds for the tally (checked after every call).
    pub async fn wait_until(&self, mut done: impl FnMut(&Tally) -> bool) -> Tally {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let tally = self.tally();
            if done(&tally) {
                return tally;
            }
            changed.await;
        }
    }

    /// Waits until every worker has finished the call it is making now (each has finished one
    /// more since): what the tally shows from then on are calls started after this.
    pub async fn settle(&self) -> Tally {
        let before = self.tally().finished;
        self.wait_until(|t| t.finished.iter().zip(&before).all(|(now, then)| now > then))
            .await
    }

    /// Stops the workers (each finishes its call) and returns the final tally.
    pub async fn stop(mut self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
        self.tally()
    }
}
