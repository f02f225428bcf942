// src/bin/cancel.rs: a client that gives up; the server's handler is told and dropped
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Job {
    pub name: String,
}

#[frpc::service(package = "jobs")]
pub trait Jobs {
    async fn run(&self, ctx: &frpc::Context, job: Job) -> Result<Job, frpc::Status>;
}

struct Worker {
    events: tokio::sync::mpsc::UnboundedSender<&'static str>,
}

impl Jobs for Worker {
    async fn run(&self, ctx: &frpc::Context, job: Job) -> Result<Job, frpc::Status> {
        // The client's timeout travels with the call as the deadline.
        assert!(ctx.deadline().is_some());
        // Work handed to a task: it stops when the client cancels (or the deadline passes).
        let (ctx, events) = (ctx.clone(), self.events.clone());
        tokio::spawn(async move {
            ctx.cancelled().await;
            let _ = events.send("server: the client cancelled the job");
        });
        std::future::pending::<()>().await; // a job that never ends; dropped on cancel
        Ok(job)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (events, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let server = frpc::Server::builder()
        .add_service(JobsServer::new(Worker { events }))
        .bind("127.0.0.1:0")
        .await?;
    let addr = server.local_addr();
    tokio::spawn(server.serve());

    let client = frpc::Client::connect(addr).await?;
    // Calls made before the server's answer to the extension offer are plain fRPC; this waits
    // for it (about one round trip). With a Go server it returns false.
    assert!(client.negotiated().await);
    let jobs = JobsClient::new(client).with_timeout(Duration::from_millis(100));
    let err = jobs
        .run(Job {
            name: "report".into(),
        })
        .await
        .unwrap_err();
    println!("client: {}", err.code()); // DEADLINE_EXCEEDED
    println!("{}", seen.recv().await.unwrap());
    Ok(())
}
