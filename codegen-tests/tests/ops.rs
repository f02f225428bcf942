//! Operation numbers: from 10, in file order across every service of the file.

use frpc::codegen::{MethodKind, Service};
use frpc_codegen_tests::{capture, twosvc};

struct Nothing;

impl twosvc::A for Nothing {
    async fn a1(
        &self,
        _: &frpc::Context,
        request: frpc_codegen_tests::kitchen::Inner,
    ) -> Result<frpc_codegen_tests::kitchen::Inner, frpc::Status> {
        Ok(request)
    }
    async fn a2(
        &self,
        _: &frpc::Context,
        _: frpc::Streaming<frpc_codegen_tests::kitchen::Inner>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
}

impl twosvc::B for Nothing {
    async fn b1(&self, _: &frpc::Context, _: ()) -> Result<frpc_codegen_tests::kitchen::Edge, frpc::Status> {
        Ok(Default::default())
    }
    async fn b2(
        &self,
        _: &frpc::Context,
        _: frpc_codegen_tests::kitchen::Edge,
        _: frpc::StreamSender<frpc_codegen_tests::kitchen::Inner>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
}

fn table(service: &dyn Service) -> Vec<(&'static str, u16, MethodKind)> {
    service.methods().iter().map(|m| (m.name, m.op, m.kind)).collect()
}

#[test]
fn two_services_number_across_the_file() {
    assert_eq!(
        (twosvc::a::A1, twosvc::a::A2, twosvc::b::B1, twosvc::b::B2),
        (10, 11, 12, 13)
    );
    let a = twosvc::AServer::new(Nothing);
    let b = twosvc::BServer::new(Nothing);
    assert_eq!(a.name(), "twosvc.A");
    assert_eq!(b.name(), "twosvc.B");
    assert_eq!(
        table(&a),
        [
            ("A1", 10, MethodKind::Unary),
            ("A2", 11, MethodKind::ClientStreaming)
        ]
    );
    assert_eq!(
        table(&b),
        [
            ("B1", 12, MethodKind::Unary),
            ("B2", 13, MethodKind::ServerStreaming)
        ]
    );
}

#[test]
fn capture_ops_match_go() {
    use capture::echo_service as ops;
    assert_eq!(
        (ops::ECHO, ops::ECHO_STREAM, ops::TESTY, ops::SEARCH, ops::UPLOAD),
        (10, 11, 12, 13, 14)
    );
}

#[test]
fn every_configuration_numbers_the_same() {
    use frpc_codegen_tests::{bytes, client_only, server_only};
    assert_eq!(bytes::twosvc::b::B2, 13);
    assert_eq!(client_only::twosvc::b::B2, 13);
    assert_eq!(server_only::twosvc::b::B2, 13);
}

/// The `split` and `audit` services of one configuration (they differ only in operation
/// numbers) and a server with all three.
macro_rules! split_services {
    ($config:ident) => {
        mod $config {
            use frpc::{Context, Status, StreamSender};
            pub use frpc_codegen_tests::$config::{audit, split};
            use split::Ticket;

            pub struct Split;

            impl split::Orders for Split {
                async fn place(&self, _: &Context, t: Ticket) -> Result<Ticket, Status> {
                    Ok(t)
                }
                async fn cancel(&self, _: &Context, t: Ticket) -> Result<Ticket, Status> {
                    Ok(Ticket { amount: 0, ..t })
                }
            }

            impl split::Billing for Split {
                async fn charge(&self, _: &Context, t: Ticket) -> Result<Ticket, Status> {
                    Ok(Ticket {
                        amount: t.amount * 2,
                        ..t
                    })
                }
                async fn refund(
                    &self,
                    _: &Context,
                    t: Ticket,
                    out: StreamSender<Ticket>,
                ) -> Result<(), Status> {
                    out.send(t).await?;
                    Ok(())
                }
            }

            impl audit::Audit for Split {
                async fn record(&self, _: &Context, t: Ticket) -> Result<Ticket, Status> {
                    Ok(Ticket {
                        id: format!("audited {}", t.id),
                        ..t
                    })
                }
            }

            /// A server with `Orders` and `Billing` (and `Audit` with `audit`).
            pub fn server(audit: bool) -> Result<frpc::Server, frpc::Error> {
                let builder = frpc::Server::builder()
                    .add_service(split::OrdersServer::new(Split))
                    .add_service(split::BillingServer::new(Split));
                let builder = if audit {
                    builder.add_service(audit::AuditServer::new(Split))
                } else {
                    builder
                };
                builder.build()
            }
        }
    };
}

split_services!(default);
split_services!(per_package);
split_services!(shared_ops);

fn ops_of(service: &dyn Service) -> Vec<u16> {
    service.methods().iter().map(|m| m.op).collect()
}

#[test]
fn per_file_numbering_clashes_on_one_server() {
    use default::{Split, split};
    assert_eq!(ops_of(&split::OrdersServer::new(Split)), [10, 11]);
    assert_eq!(ops_of(&split::BillingServer::new(Split)), [10, 11]);
    assert_eq!((split::orders::PLACE, split::billing::CHARGE), (10, 10));
    let err = default::server(false).unwrap_err().to_string();
    assert!(err.contains("operation 10 is claimed twice"), "{err}");
    // The error names the codegen option that fixes it.
    assert!(
        err.contains("operation_numbering(OperationNumbering::Shared)"),
        "{err}"
    );
}

#[test]
fn per_package_numbering_runs_across_the_files_of_a_package() {
    use per_package::{Split, audit, split};
    assert_eq!(
        (
            split::orders::PLACE,
            split::orders::CANCEL,
            split::billing::CHARGE,
            split::billing::REFUND
        ),
        (10, 11, 12, 13)
    );
    assert_eq!(ops_of(&split::OrdersServer::new(Split)), [10, 11]);
    assert_eq!(ops_of(&split::BillingServer::new(Split)), [12, 13]);
    // Another package starts again.
    assert_eq!(audit::audit::RECORD, 10);
    assert!(per_package::server(false).is_ok());
    assert!(per_package::server(true).is_err());
}

#[test]
fn shared_numbering_runs_across_the_whole_call() {
    use shared_ops::{Split, audit, split};
    assert_eq!(ops_of(&split::OrdersServer::new(Split)), [10, 11]);
    assert_eq!(ops_of(&split::BillingServer::new(Split)), [12, 13]);
    assert_eq!(ops_of(&audit::AuditServer::new(Split)), [14]);
    assert_eq!(audit::audit::RECORD, 14);
    assert!(shared_ops::server(true).is_ok());
}

/// Services of two files and two packages on one server, called through their clients.
#[tokio::test]
async fn shared_numbering_serves_every_file_on_one_server() {
    use shared_ops::{audit, split};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = shared_ops::server(true).unwrap();
    let serving = tokio::spawn(async move { server.serve_listener(listener).await });

    let conn = frpc::Client::connect(addr).await.unwrap();
    let orders = split::OrdersClient::new(conn.clone());
    let billing = split::BillingClient::new(conn.clone());
    let audit = audit::AuditClient::new(conn);
    let ticket = split::Ticket {
        id: "t1".into(),
        amount: 21,
    };

    assert_eq!(orders.place(ticket.clone()).await.unwrap(), ticket);
    assert_eq!(orders.cancel(ticket.clone()).await.unwrap().amount, 0);
    assert_eq!(billing.charge(ticket.clone()).await.unwrap().amount, 42);
    let mut refunds = billing.refund(ticket.clone()).await.unwrap();
    assert_eq!(refunds.message().await.unwrap(), Some(ticket.clone()));
    assert_eq!(refunds.message().await.unwrap(), None);
    assert_eq!(audit.record(ticket).await.unwrap().id, "audited t1");

    serving.abort();
}
