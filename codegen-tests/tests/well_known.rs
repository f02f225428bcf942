//! Well-known types as requests and responses (`twosvc.Clock`): `Empty`, `Timestamp` and
//! `Duration` have a protobuf encoding, so a server with such a service still takes protobuf
//! (a server takes it only if every message of every service has one), and calls work in both
//! encodings over TCP.

use frpc::codegen::prost_types::{Duration, Timestamp};
use frpc::{Context, Status, StreamSender};
use frpc_codegen_tests::twosvc::{Clock, ClockClient, ClockServer};

struct Fixed;

/// The instant `Now` answers.
const NOW: Timestamp = Timestamp {
    seconds: 1_700_000_000,
    nanos: 123,
};

impl Clock for Fixed {
    async fn now(&self, _: &Context, _: ()) -> Result<Timestamp, Status> {
        Ok(NOW)
    }

    async fn wait(&self, _: &Context, request: Duration) -> Result<Duration, Status> {
        Ok(Duration {
            seconds: -request.seconds,
            nanos: -request.nanos,
        })
    }

    async fn ticks(&self, _: &Context, every: Duration, out: StreamSender<Timestamp>) -> Result<(), Status> {
        for i in 1..=3 {
            let tick = Timestamp {
                seconds: NOW.seconds + i * every.seconds,
                nanos: 0,
            };
            out.send(tick)
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn well_known_requests_and_responses_keep_protobuf_on() {
    let (_reporter, health) = frpc::health::service();
    let server = frpc::Server::builder()
        .add_service(ClockServer::new(Fixed))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let serving = tokio::spawn(server.serve());
    for protobuf in [true, false] {
        let raw = frpc_codegen_tests::client_in(addr, protobuf).await;
        let clock = ClockClient::new(raw);

        assert_eq!(clock.now(()).await.unwrap(), NOW);
        let back = clock.wait(Duration { seconds: 5, nanos: 7 }).await.unwrap();
        assert_eq!((back.seconds, back.nanos), (-5, -7), "protobuf: {protobuf}");
        let mut ticks = clock
            .ticks(Duration {
                seconds: 60,
                nanos: 0,
            })
            .await
            .unwrap();
        let mut seconds = Vec::new();
        while let Some(tick) = ticks.message().await.unwrap() {
            seconds.push(tick.seconds - NOW.seconds);
        }
        assert_eq!(seconds, [60, 120, 180], "protobuf: {protobuf}");
    }
    serving.abort();
}
