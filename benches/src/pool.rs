//! A cell's clients as one pool: connect them, warm them up, and drive them all for one sample.
//! Sits above [`crate::frameworks`] (which client to make) and [`crate::workload`] (what each
//! client does).

use std::net::SocketAddr;
use std::time::Duration;

use crate::cpu::Meter;
use crate::frameworks::{Client, Framework};
use crate::workload::{Body, Callers, Cell, Limit, Outcome, Window};

/// Connects `clients` clients to the `framework` server at `addr` (the first error if any
/// cannot connect, or finds a server it cannot measure).
pub async fn connect(
    framework: Framework,
    addr: SocketAddr,
    clients: usize,
    framing: frpc::Framing,
) -> Result<Vec<Client>, String> {
    let connecting: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(Client::connect(framework, addr, framing)))
        .collect();
    let mut connected = Vec::with_capacity(clients);
    for client in connecting {
        connected.push(client.await.expect("connect task")?);
    }
    Ok(connected)
}

/// Drives every client on its own task with the same message, inflight count, callers and
/// limit; gives the clients back with the total outcome.
pub async fn drive(
    clients: Vec<Client>,
    body: &Body,
    inflight: usize,
    callers: Callers,
    limit: Limit,
) -> (Vec<Client>, Outcome) {
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let (body, limit) = (body.clone(), limit.clone());
            tokio::spawn(async move {
                let outcome = client.drive(&body, inflight, callers, limit).await;
                (client, outcome)
            })
        })
        .collect();
    let (mut clients, mut outcomes) = (Vec::with_capacity(tasks.len()), Vec::with_capacity(tasks.len()));
    for task in tasks {
        let (client, outcome) = task.await.expect("client task");
        clients.push(client);
        outcomes.push(outcome);
    }
    (clients, Outcome::merge(outcomes))
}

/// Runs one sample of `cell` on connected `clients`: `settle` of unmeasured calls, then
/// `cell.duration` measured, with the CPU time of the server `server_pid` (if known) and of
/// the clients over that window; gives the clients back for the next sample.
pub async fn sample(
    clients: Vec<Client>,
    body: &Body,
    cell: &Cell,
    settle: Duration,
    server_pid: Option<u32>,
) -> (Vec<Client>, Outcome) {
    let window = Window::new(settle, cell.duration);
    let meter = Meter::start(window.start, window.end, server_pid);
    let limit = cell.limit(Limit::window(window));
    let (clients, mut outcome) = drive(clients, body, cell.inflight, cell.callers, limit).await;
    outcome.cpu = meter.finish().await;
    (clients, outcome)
}

/// Runs `cell`'s load on `clients` for `cell.warmup` without measuring: fresh connections grow
/// their buffers and windows before the first sample.
pub async fn warm_up(clients: Vec<Client>, body: &Body, cell: &Cell) -> Vec<Client> {
    let limit = cell.limit(Limit::window(Window::new(Duration::ZERO, cell.warmup)));
    drive(clients, body, cell.inflight, cell.callers, limit).await.0
}
