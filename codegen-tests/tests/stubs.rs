//! `generate_default_stubs(true)` (the `stubs` configuration, as tonic-build's option): a
//! service implements only some of its methods, or none, and the rest answer `UNIMPLEMENTED`
//! over loopback TCP, in every kind.

use frpc::{Code, Context, Status};
use frpc_codegen_tests::stubs::kitchen::Inner;
use frpc_codegen_tests::stubs::twosvc::{A, AClient, AServer, B, BClient, BServer};

/// Implements `A1` only; `A2` (client streaming) keeps its stub.
struct OnlyA1;

impl A for OnlyA1 {
    async fn a1(&self, _: &Context, request: Inner) -> Result<Inner, Status> {
        Ok(request)
    }
}

/// Implements nothing: `B1` (unary) and `B2` (server streaming) are stubs.
struct Nothing;

impl B for Nothing {}

#[tokio::test]
async fn unimplemented_methods_answer_unimplemented() {
    let server = frpc::Server::builder()
        .add_service(AServer::new(OnlyA1))
        .add_service(BServer::new(Nothing))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let serving = tokio::spawn(server.serve());
    let client = frpc::Client::connect(addr).await.unwrap();
    let (a, b) = (AClient::new(client.clone()), BClient::new(client));

    let inner = Inner {
        name: "x".into(),
        n: 1,
    };
    assert_eq!(a.a1(inner.clone()).await.unwrap(), inner);

    // A stub ends a stream at once: the status comes with the open, or at the latest as the
    // reply.
    let a2 = match a.a2().await {
        Ok(mut upload) => {
            let _ = upload.send(inner).await;
            upload.close_and_recv().await.map(|_| ())
        }
        Err(err) => Err(err),
    };
    assert_stub(a2, "twosvc.A/A2");
    assert_stub(b.b1(()).await, "twosvc.B/B1");
    let b2 = match b.b2(Default::default()).await {
        Ok(mut stream) => stream.message().await.map(|_| ()),
        Err(err) => Err(err),
    };
    assert_stub(b2, "twosvc.B/B2");

    // The connection still serves the implemented method.
    assert_eq!(a.a1(Inner::default()).await.unwrap(), Inner::default());
    serving.abort();
}

/// `result` is a stub's answer: `UNIMPLEMENTED`, naming `method`.
#[track_caller]
fn assert_stub<T: std::fmt::Debug>(result: Result<T, frpc::Error>, method: &str) {
    let err = result.unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err}");
    assert!(
        err.to_string()
            .contains(&format!("`{method}` is not implemented")),
        "{err}"
    );
}
