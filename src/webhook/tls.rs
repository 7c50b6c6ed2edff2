//! The webhook's certificate, reloaded when its files change.
//!
//! The certificate is handed to rustls per handshake by a resolver, so a renewed certificate (a Secret
//! rotated by cert-manager, or the chart on upgrade) serves new connections without a restart. The
//! files are polled rather than watched: Secret volumes swap a symlink, which inotify reports poorly,
//! and reading two small files every few seconds costs nothing.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use rustls::{
    ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use tracing::{info, warn};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    // The I/O error is the source, printed after this by `{:#}`: repeating it here doubled it.
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: no PEM certificate found")]
    NoCertificate { path: PathBuf },
    #[error("{path}: not a PEM certificate chain: {message}")]
    BadCertificate { path: PathBuf, message: String },
    #[error("{path}: not a PEM private key: {message}")]
    BadKey { path: PathBuf, message: String },
    #[error("{cert} and {key} do not belong together: {message}")]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        message: String,
    },
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The ring provider, which kube uses too: one crypto stack in the binary.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificate and key files and what was last loaded from them.
pub struct CertStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// The file contents behind `current`, to notice a change.
    loaded: Mutex<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for CertStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertStore")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertStore {
    /// Loads the pair; fails if either file is unreadable or they do not match.
    pub fn load(
        cert_path: impl Into<PathBuf>,
        key_path: impl Into<PathBuf>,
    ) -> Result<CertStore, TlsError> {
        let (cert_path, key_path) = (cert_path.into(), key_path.into());
        let provider = provider();
        let (cert_pem, key_pem) = read_pair(&cert_path, &key_path)?;
        let key = certified_key(&cert_path, &key_path, &cert_pem, &key_pem, &provider)?;
        Ok(CertStore {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Arc::new(key)),
            loaded: Mutex::new((cert_pem, key_pem)),
        })
    }

    /// Re-reads the files; swaps in the new pair if they changed and are valid. `Ok(true)` when the
    /// certificate was replaced. On error the previous certificate stays in service.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let (cert_pem, key_pem) = read_pair(&self.cert_path, &self.key_path)?;
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if loaded.0 == cert_pem && loaded.1 == key_pem {
            return Ok(false);
        }
        let key = certified_key(
            &self.cert_path,
            &self.key_path,
            &cert_pem,
            &key_pem,
            &self.provider,
        )?;
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(key);
        *loaded = (cert_pem, key_pem);
        Ok(true)
    }

    /// The end-entity certificate in service, DER encoded.
    pub fn current_certificate(&self) -> Option<CertificateDer<'static>> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .cert
            .first()
            .cloned()
    }

    /// A rustls server configuration serving this store's certificate (HTTP/1.1).
    pub fn server_config(self: &Arc<Self>) -> Result<ServerConfig, TlsError> {
        let mut config = ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    /// Polls the files forever, every `every`, calling `on_reload` after each reload.
    pub async fn watch(self: Arc<Self>, every: Duration, on_reload: impl Fn() + Send) {
        // tokio panics on a zero period; the command line refuses zero, this keeps the API total.
        let mut ticker = tokio::time::interval(every.max(Duration::from_millis(1)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            match self.reload_if_changed() {
                Ok(true) => {
                    info!(cert = %self.cert_path.display(), "webhook certificate reloaded");
                    on_reload();
                }
                Ok(false) => {}
                // A rotation may be half written (certificate renewed, key not yet): keep the old
                // pair and try again at the next tick.
                Err(error) => {
                    let error = anyhow::Error::from(error);
                    warn!(
                        error = format!("{error:#}"),
                        "keeping the current webhook certificate"
                    );
                }
            }
        }
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self
                .current
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        ))
    }
}

fn read_pair(cert: &Path, key: &Path) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })
    };
    Ok((read(cert)?, read(key)?))
}

fn certified_key(
    cert_path: &Path,
    key_path: &Path,
    cert_pem: &[u8],
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadCertificate {
            path: cert_path.to_owned(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::BadKey {
        path: key_path.to_owned(),
        message: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| TlsError::Mismatch {
        cert: cert_path.to_owned(),
        key: key_path.to_owned(),
        message: e.to_string(),
    })
}
