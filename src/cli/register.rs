//! `tidal register-webhooks`: puts the admission webhook configurations in place only once the webhook
//! answers through its Service. A configuration that is active while its Service cannot be reached
//! makes the API server fail every call, and with `failurePolicy: Ignore` admit those pods unchecked;
//! registering after the webhook answers leaves no such window at install. The chart runs this as a
//! post-install, post-upgrade and post-rollback hook; later changes are applied in place (server-side
//! apply), so there is never a moment without a configuration either.

use std::{
    collections::BTreeSet,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Service,
        rbac::v1::ClusterRole,
    },
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams},
};
use rustls::{
    DigitallySignedStruct, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    crypto::CryptoProvider,
    pki_types::{CertificateDer, ServerName, UnixTime},
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::info;

use crate::{api::GoDuration, runtime::ClientArgs};

/// The field manager of the applied configurations.
const FIELD_MANAGER: &str = "tidal-register-webhooks";

#[derive(Debug, Clone, Args)]
pub struct RegisterArgs {
    /// A JSON list of MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects.
    #[arg(long, value_name = "FILE")]
    pub configurations: PathBuf,
    /// A cluster-scoped ClusterRole the configurations are owned by: deleting it (as `helm uninstall`
    /// does) lets the garbage collector delete them.
    #[arg(long, value_name = "NAME")]
    pub owner_cluster_role: Option<String>,
    /// How long to wait for every Service the configurations call to answer.
    #[arg(long, default_value = "4m", value_parser = go_duration)]
    pub timeout: Duration,
    /// Answers in a row (one per `--interval`) each Service must give before the configurations are
    /// applied: the first answer only shows that this node's proxy rules are in place, and the API
    /// server's may follow a moment later.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub answers: u32,
    /// Time between two probes.
    #[arg(long, default_value = "1s", value_parser = go_duration)]
    pub interval: Duration,
    #[command(flatten)]
    pub client: ClientArgs,
}

fn go_duration(text: &str) -> Result<Duration, String> {
    text.parse::<GoDuration>()
        .map(|d| d.as_std())
        .map_err(|e| e.to_string())
}

/// One webhook configuration to apply.
#[derive(Debug, Clone, PartialEq)]
enum Configuration {
    Mutating(MutatingWebhookConfiguration),
    Validating(ValidatingWebhookConfiguration),
}

/// A Service a webhook is called through, as the API server resolves it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ServiceRef {
    namespace: String,
    name: String,
    port: u16,
}

impl std::fmt::Display for ServiceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}:{}", self.namespace, self.name, self.port)
    }
}

/// Reads the configurations (a JSON list): only the two webhook configuration kinds, each named.
fn parse_configurations(text: &str) -> anyhow::Result<Vec<Configuration>> {
    let objects: Vec<Value> =
        serde_json::from_str(text).context("the configurations are not a JSON list")?;
    objects
        .into_iter()
        .enumerate()
        .map(|(index, object)| {
            let kind = object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let configuration = match kind.as_str() {
                "MutatingWebhookConfiguration" => {
                    Configuration::Mutating(serde_json::from_value(object)?)
                }
                "ValidatingWebhookConfiguration" => {
                    Configuration::Validating(serde_json::from_value(object)?)
                }
                other => bail!("object {index} is a {other:?}, not a webhook configuration"),
            };
            if configuration.name().is_empty() {
                bail!("object {index} ({kind}) has no name");
            }
            Ok(configuration)
        })
        .collect()
}

impl Configuration {
    fn name(&self) -> String {
        match self {
            Configuration::Mutating(c) => c.name_any(),
            Configuration::Validating(c) => c.name_any(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Configuration::Mutating(_) => "MutatingWebhookConfiguration",
            Configuration::Validating(_) => "ValidatingWebhookConfiguration",
        }
    }

    /// The Services its webhooks call (webhooks with a URL are not waited for).
    fn services(&self) -> Vec<ServiceRef> {
        let configs: Vec<_> = match self {
            Configuration::Mutating(c) => c
                .webhooks
                .iter()
                .flatten()
                .map(|w| &w.client_config)
                .collect(),
            Configuration::Validating(c) => c
                .webhooks
                .iter()
                .flatten()
                .map(|w| &w.client_config)
                .collect(),
        };
        configs
            .into_iter()
            .filter_map(|config| config.service.as_ref())
            .map(|service| ServiceRef {
                namespace: service.namespace.clone(),
                name: service.name.clone(),
                port: service
                    .port
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            })
            .collect()
    }

    fn set_owner(&mut self, owner: OwnerReference) {
        let meta = match self {
            Configuration::Mutating(c) => c.meta_mut(),
            Configuration::Validating(c) => c.meta_mut(),
        };
        meta.owner_references = Some(vec![owner]);
        // Server-side apply refuses an object that carries these.
        meta.managed_fields = None;
        meta.resource_version = None;
    }
}

/// Waits until every Service answers, then applies the configurations.
pub(crate) async fn register(args: &RegisterArgs) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(&args.configurations)
        .with_context(|| format!("reading {}", args.configurations.display()))?;
    let mut configurations = parse_configurations(&text)
        .with_context(|| format!("reading {}", args.configurations.display()))?;
    let client = args.client.client().await?;
    let services: BTreeSet<ServiceRef> = configurations
        .iter()
        .flat_map(Configuration::services)
        .collect();
    let deadline = Instant::now() + args.timeout;
    for service in &services {
        wait_for_answers(&client, service, args, deadline).await?;
    }
    if let Some(role) = &args.owner_cluster_role {
        let owner = Api::<ClusterRole>::all(client.clone())
            .get(role)
            .await
            .with_context(|| format!("reading ClusterRole {role}, the owner"))?;
        let reference = OwnerReference {
            api_version: ClusterRole::api_version(&()).into_owned(),
            kind: ClusterRole::kind(&()).into_owned(),
            name: owner.name_any(),
            uid: owner.uid().context("the owner ClusterRole has no uid")?,
            ..OwnerReference::default()
        };
        for configuration in &mut configurations {
            configuration.set_owner(reference.clone());
        }
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut applied = Vec::new();
    for configuration in &configurations {
        let name = configuration.name();
        match configuration {
            Configuration::Mutating(c) => Api::<MutatingWebhookConfiguration>::all(client.clone())
                .patch(&name, &params, &Patch::Apply(c))
                .await
                .map(drop),
            Configuration::Validating(c) => {
                Api::<ValidatingWebhookConfiguration>::all(client.clone())
                    .patch(&name, &params, &Patch::Apply(c))
                    .await
                    .map(drop)
            }
        }
        .with_context(|| format!("applying {} {name}", configuration.kind()))?;
        info!(kind = configuration.kind(), %name, "applied");
        applied.push(format!("{} {name}", configuration.kind()));
    }
    Ok(format!("applied {}\n", applied.join(", ")))
}

/// Probes the Service's cluster IP until it answers `args.answers` times in a row.
async fn wait_for_answers(
    client: &Client,
    service: &ServiceRef,
    args: &RegisterArgs,
    deadline: Instant,
) -> anyhow::Result<()> {
    let api = Api::<Service>::namespaced(client.clone(), &service.namespace);
    let mut in_a_row = 0;
    let mut last_error = String::new();
    loop {
        let outcome = match cluster_ip(&api, &service.name).await {
            Ok(ip) => probe(&ip, service).await,
            Err(error) => Err(error),
        };
        match outcome {
            Ok(()) => {
                in_a_row += 1;
                if in_a_row >= args.answers {
                    info!(%service, answers = in_a_row, "the webhook answers through its Service");
                    return Ok(());
                }
            }
            Err(error) => {
                let text = format!("{error:#}");
                if in_a_row > 0 || text != last_error {
                    info!(%service, error = %text, "the webhook does not answer yet");
                }
                in_a_row = 0;
                last_error = text;
            }
        }
        if Instant::now() + args.interval > deadline {
            bail!(
                "the webhook did not answer through Service {service} within {}: {last_error}",
                humantime::format_duration(args.timeout)
            );
        }
        tokio::time::sleep(args.interval).await;
    }
}

/// The Service's cluster IP: where the API server sends the webhook's calls.
async fn cluster_ip(api: &Api<Service>, name: &str) -> anyhow::Result<String> {
    let service = api.get(name).await.context("reading the Service")?;
    match service.spec.and_then(|spec| spec.cluster_ip) {
        Some(ip) if !ip.is_empty() && ip != "None" => Ok(ip),
        _ => bail!("the Service has no cluster IP"),
    }
}

/// One `GET /readyz` on the webhook's HTTPS port through the cluster IP: `200` means a webhook pod
/// behind the Service has its cache and takes calls. The certificate is not checked here (the
/// configurations' caBundle may only be injected later, by cert-manager); the API server checks it.
async fn probe(ip: &str, service: &ServiceRef) -> anyhow::Result<()> {
    const LIMIT: Duration = Duration::from_secs(3);
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect((ip, service.port))
            .await
            .with_context(|| format!("connecting to {ip}:{}", service.port))?;
        let host = format!("{}.{}.svc", service.name, service.namespace);
        let server_name = ServerName::try_from(host.clone()).context("the Service name")?;
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(any_certificate_client()?))
            .connect(server_name, tcp)
            .await
            .context("TLS handshake")?;
        let request = format!("GET /readyz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        tls.write_all(request.as_bytes()).await?;
        // The status line is all that is needed; it may arrive in pieces.
        let mut head = Vec::with_capacity(64);
        let mut chunk = [0; 64];
        while !head.contains(&b'\n') && head.len() < 1024 {
            let read = tls.read(&mut chunk).await?;
            if read == 0 {
                break;
            }
            head.extend_from_slice(&chunk[..read]);
        }
        let status_line = String::from_utf8_lossy(&head).into_owned();
        match status_line.split_whitespace().nth(1) {
            Some("200") => Ok(()),
            _ => bail!(
                "/readyz answered {:?}",
                status_line.lines().next().unwrap_or("")
            ),
        }
    };
    tokio::time::timeout(LIMIT, exchange)
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {}s", LIMIT.as_secs()))?
}

fn any_certificate_client() -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(
        rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .context("TLS versions")?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
    )
}

/// Accepts any server certificate, still checking that the handshake is signed by its key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"[
      {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
       "metadata": {"name": "tidal"},
       "webhooks": [{"name": "pods.mutate.tidal.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                     "clientConfig": {"service": {"namespace": "tidal-system", "name": "tidal-webhook", "port": 443}}}]},
      {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
       "metadata": {"name": "tidal"},
       "webhooks": [
         {"name": "a.validate.tidal.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
          "clientConfig": {"service": {"namespace": "tidal-system", "name": "tidal-webhook"}}},
         {"name": "b.validate.tidal.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
          "clientConfig": {"url": "https://example.invalid/validate"}}]}
    ]"#;

    #[test]
    fn reads_both_kinds_and_the_services_they_call() {
        let configurations = parse_configurations(TWO).unwrap();
        assert_eq!(configurations.len(), 2);
        assert_eq!(configurations[0].kind(), "MutatingWebhookConfiguration");
        assert_eq!(configurations[1].kind(), "ValidatingWebhookConfiguration");
        let services: BTreeSet<ServiceRef> = configurations
            .iter()
            .flat_map(Configuration::services)
            .collect();
        // One Service, the default port filled in; the URL webhook is not waited for.
        assert_eq!(
            services.into_iter().collect::<Vec<_>>(),
            [ServiceRef {
                namespace: "tidal-system".into(),
                name: "tidal-webhook".into(),
                port: 443
            }]
        );
    }

    #[test]
    fn refuses_other_kinds_and_unnamed_objects() {
        let error = parse_configurations(r#"[{"apiVersion": "v1", "kind": "ConfigMap"}]"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"ConfigMap\""), "{error}");
        let error = parse_configurations(
            r#"[{"apiVersion": "admissionregistration.k8s.io/v1",
                 "kind": "MutatingWebhookConfiguration", "metadata": {}}]"#,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("no name"), "{error}");
        assert!(parse_configurations("{}").is_err());
    }

    #[test]
    fn the_owner_replaces_what_server_side_apply_refuses() {
        let mut configuration = parse_configurations(TWO).unwrap().remove(0);
        if let Configuration::Mutating(c) = &mut configuration {
            c.metadata.resource_version = Some("7".into());
        }
        configuration.set_owner(OwnerReference {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: "ClusterRole".into(),
            name: "tidal-webhook".into(),
            uid: "u".into(),
            ..OwnerReference::default()
        });
        let Configuration::Mutating(c) = configuration else {
            unreachable!()
        };
        assert_eq!(
            c.metadata.owner_references.unwrap()[0].name,
            "tidal-webhook"
        );
        assert_eq!(c.metadata.resource_version, None);
    }
}
