//! gRPC over TLS (features `grpc` and `tls`): on a shared port ([`crate::Builder::grpc`] with
//! [`crate::Builder::tls`]) the server advertises ALPN `h2` and, once the handshake is done,
//! hands connections that chose `h2` to the gRPC face and the rest (no ALPN, or another
//! protocol) to fRPC over TLS; and [`GrpcChannel::connect_tls`], the client direction over
//! TLS. Services floor, beside the gRPC face.

use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::GrpcChannel;
use crate::status::Error;

/// HTTP/2's ALPN protocol id, the one gRPC clients offer.
const H2: &[u8] = b"h2";

/// `acceptor` advertising `h2` too: after the protocols it already lists, so a client
/// offering one of those and `h2` still gets what the server preferred.
pub(crate) fn advertise_h2(acceptor: TlsAcceptor) -> TlsAcceptor {
    let config = acceptor.config();
    if config.alpn_protocols.iter().any(|protocol| protocol == H2) {
        return acceptor;
    }
    let mut config = ServerConfig::clone(config);
    config.alpn_protocols.push(H2.to_vec());
    TlsAcceptor::from(Arc::new(config))
}

/// Whether the client chose `h2` in the handshake: a gRPC (HTTP/2) client.
pub(crate) fn chose_h2<IO>(stream: &tokio_rustls::server::TlsStream<IO>) -> bool {
    stream.get_ref().1.alpn_protocol() == Some(H2)
}

impl GrpcChannel {
    /// Connects to `addr` (`host:port`) over TLS, checking the server's certificate for
    /// `server_name` with `tls` (its ALPN list becomes `h2`, which gRPC servers require). An
    /// invalid name is [`Error::Config`]; a failed connect or handshake [`Error::Unavailable`]
    /// saying why.
    pub async fn connect_tls(
        addr: &str,
        server_name: &str,
        tls: Arc<ClientConfig>,
    ) -> Result<GrpcChannel, Error> {
        let name = ServerName::try_from(server_name.to_owned())
            .map_err(|err| Error::Config(format!("invalid TLS server name {server_name:?}: {err}")))?;
        let mut config = ClientConfig::clone(&tls);
        config.alpn_protocols = vec![H2.to_vec()];
        let connector = TlsConnector::from(Arc::new(config));
        let target = addr.to_owned();
        let connect = tower::service_fn(move |_: http::Uri| {
            let (connector, name, target) = (connector.clone(), name.clone(), target.clone());
            async move {
                let tcp = TcpStream::connect(target).await?;
                tcp.set_nodelay(true)?;
                let stream = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        });
        // The connector does TLS, so tonic sees `http://`; requests still say `https` and the
        // server's name (`:scheme`, `:authority`).
        let origin = format!("https://{server_name}")
            .parse()
            .map_err(|err| Error::Config(format!("invalid TLS server name {server_name:?}: {err}")))?;
        let endpoint = super::client::endpoint(&format!("http://{addr}"))?.origin(origin);
        let channel = endpoint
            .connect_with_connector(connect)
            .await
            .map_err(|err| super::client::unavailable(addr, &err))?;
        Ok(GrpcChannel::new(channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server config for a fresh self-signed certificate, listing `alpn`.
    fn config(alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = tokio_rustls::rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der())
            .unwrap();
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    #[test]
    fn h2_is_advertised_after_the_servers_own_protocols_once() {
        let none = advertise_h2(TlsAcceptor::from(config(&[])));
        assert_eq!(none.config().alpn_protocols, vec![b"h2".to_vec()]);
        let own = advertise_h2(TlsAcceptor::from(config(&[b"frpc"])));
        assert_eq!(
            own.config().alpn_protocols,
            vec![b"frpc".to_vec(), b"h2".to_vec()]
        );
        let listed = config(&[b"h2", b"x"]);
        let same = advertise_h2(TlsAcceptor::from(listed.clone()));
        assert!(
            Arc::ptr_eq(same.config(), &listed),
            "a config listing h2 is kept as it is"
        );
    }
}
