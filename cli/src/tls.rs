//! `--tls` and `--ca`: the rustls client configuration the CLI connects with. The server's
//! certificate is checked against the system's roots, or only against the `--ca` file's.

use std::path::Path;
use std::sync::Arc;

use frpc::tls::rustls::pki_types::CertificateDer;
use frpc::tls::rustls::pki_types::pem::PemObject;
use frpc::tls::rustls::{self, RootCertStore};

use crate::error::{CliError, other};

/// A client configuration trusting the certificates of `ca` (a PEM file), or the system's
/// roots without one.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, CliError> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| other(format!("cannot read --ca {}: {e}", path.display())))?;
            for cert in certs {
                let cert = cert.map_err(|e| other(format!("--ca {}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| other(format!("--ca {}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(other(format!("--ca {}: no certificate in it", path.display())));
            }
        }
        None => {
            // Certificates the platform cannot parse are skipped, as browsers do.
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
            if roots.is_empty() {
                return Err(other("no system root certificates found: pass --ca FILE"));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The name the server's certificate must carry: `--server-name`, else the host of `addr`
/// (`host:port`, `[v6]:port`).
pub fn server_name<'a>(addr: &'a str, explicit: Option<&'a str>) -> &'a str {
    if let Some(name) = explicit {
        return name;
    }
    let host = addr.rsplit_once(':').map_or(addr, |(host, _port)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_host_unless_given() {
        assert_eq!(server_name("api.example.com:443", None), "api.example.com");
        assert_eq!(server_name("[::1]:8080", None), "::1");
        assert_eq!(server_name("127.0.0.1:8080", Some("localhost")), "localhost");
        assert_eq!(server_name("host", None), "host");
    }
}
