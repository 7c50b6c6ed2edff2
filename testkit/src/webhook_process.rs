//! `tidal webhook` as its own process, against the fake API server, with a certificate of its own:
//! what its memory peaks at and holds (from /proc, Linux only) is the process's alone.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::{ClientConfig, RootCertStore};
use tokio::process::{Child, Command};
use tokio_rustls::TlsConnector;

use crate::flood;

pub struct WebhookProcess {
    child: Child,
    /// The HTTPS admission port.
    pub https: SocketAddr,
    /// The plain-HTTP metrics and probe port.
    pub plain: SocketAddr,
    /// A connector that trusts the webhook's certificate (for `localhost`).
    pub tls: TlsConnector,
}

fn free_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address")
}

impl WebhookProcess {
    /// Starts `binary webhook` with `kubeconfig`, its certificate written to `dir`, and waits until
    /// it is ready.
    pub async fn start(binary: &Path, kubeconfig: &Path, dir: &Path) -> WebhookProcess {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca =
            CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key")).expect("CA");
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec!["localhost".to_owned()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("certificate");
        let (cert_path, key_path) = (dir.join("webhook.crt"), dir.join("webhook.key"));
        std::fs::write(&cert_path, cert.pem()).expect("write");
        std::fs::write(&key_path, key.serialize_pem()).expect("write");
        let mut roots = RootCertStore::empty();
        roots.add(ca.der().clone()).expect("root");
        let config = ClientConfig::builder_with_provider(tidal::webhook::tls::provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let (https, plain) = (free_addr(), free_addr());
        let child = Command::new(binary)
            .arg("webhook")
            .arg("--tls-cert")
            .arg(&cert_path)
            .arg("--tls-key")
            .arg(&key_path)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--listen", &https.to_string()])
            .args(["--metrics-bind-address", &plain.to_string()])
            .args(["--shutdown-delay", "0s", "--lookup-wait", "0s"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("tidal webhook starts");
        let process = WebhookProcess {
            child,
            https,
            plain,
            tls: TlsConnector::from(Arc::new(config)),
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let from = [127, 0, 0, 1].into();
            if let Ok((200, _)) = flood::request(plain, from, None, &flood::get("/readyz")).await {
                return process;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "tidal webhook did not get ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts a new peak: the kernel resets the process's high-water mark (`VmHWM`) to its RSS.
    pub fn reset_peak(&self) {
        let pid = self.child.id().expect("running");
        let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
    }

    /// KiB of `field` (`VmRSS`, `VmHWM`) in the process's /proc status.
    pub fn status_kib(&self, field: &str) -> u64 {
        let pid = self.child.id().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// The sum of the samples of the metric lines starting with `prefix`.
    pub async fn metric(&self, prefix: &str) -> f64 {
        let from = [127, 0, 0, 1].into();
        let Ok((_, body)) = flood::request(self.plain, from, None, &flood::get("/metrics")).await
        else {
            return 0.0;
        };
        String::from_utf8_lossy(&body)
            .lines()
            .filter(|line| line.starts_with(prefix))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}
