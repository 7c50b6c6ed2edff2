//! One way to reach the API server, for every command: the same flags, the same lookup order, the same
//! client settings.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};

/// `--kubeconfig` and `--context`, flattened into every command that talks to a cluster.
#[derive(Debug, Clone, Default, Args)]
pub struct ClientArgs {
    /// Kubeconfig file. Default: the in-cluster service account, else $KUBECONFIG or ~/.kube/config.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context. Default: the kubeconfig's current context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

impl ClientArgs {
    /// The client configuration: an explicit `--kubeconfig`/`--context` wins; otherwise the in-cluster
    /// service account, else `$KUBECONFIG` / `~/.kube/config`.
    pub async fn config(&self) -> anyhow::Result<Config> {
        let config = config(self.kubeconfig.as_deref(), self.context.as_deref()).await?;
        check_client_certificate(&config)?;
        Ok(config)
    }

    /// A client with kube's default retries (429, 503 and 504, honouring `Retry-After`).
    pub async fn client(&self) -> anyhow::Result<Client> {
        Client::try_from(self.config().await?).context("building the Kubernetes client")
    }
}

async fn config(kubeconfig: Option<&Path>, context: Option<&str>) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            // kube's error for a missing file repeats the system's message after its own; ours says
            // it once.
            std::fs::metadata(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let file = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            if let Some(wanted) = context {
                unknown_context(&file, wanted)?;
            }
            Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None if context.is_some() => {
            if let (Ok(file), Some(wanted)) = (Kubeconfig::read(), context) {
                unknown_context(&file, wanted)?;
            }
            Config::from_kubeconfig(&options)
                .await
                .context("reading the kubeconfig")?
        }
        None => match Config::incluster() {
            Ok(config) => config,
            Err(_) => Config::from_kubeconfig(&options)
                .await
                .map_err(|e| no_credentials(&e))?,
        },
    };
    Ok(config)
}

/// `--context` names no context of the kubeconfig: say which it has, and the likely one.
fn unknown_context(file: &Kubeconfig, wanted: &str) -> anyhow::Result<()> {
    let names: Vec<&str> = file.contexts.iter().map(|c| c.name.as_str()).collect();
    if names.contains(&wanted) {
        return Ok(());
    }
    let hint = crate::api::validation::did_you_mean(wanted, names.iter().copied())
        .map_or(String::new(), |n| format!("; did you mean {n:?}?"));
    let has = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    anyhow::bail!("no context {wanted:?} in the kubeconfig (it has: {has}){hint}")
}

/// Outside a pod, with no kubeconfig: one short line that says where tidal looked and what to do,
/// instead of kube's nested error that repeats its cause. The command adds what it can do without a
/// cluster ([`without_a_cluster`]).
fn no_credentials(error: &kube::config::KubeconfigError) -> anyhow::Error {
    let looked = match std::env::var_os("KUBECONFIG") {
        Some(path) => format!("$KUBECONFIG ({})", path.to_string_lossy()),
        None => "~/.kube/config".to_owned(),
    };
    let cause =
        std::error::Error::source(error).map_or_else(|| error.to_string(), ToString::to_string);
    NoCluster {
        looked,
        cause,
        offline: String::new(),
    }
    .into()
}

/// Neither in a pod nor with a kubeconfig.
#[derive(Debug, thiserror::Error)]
#[error(
    "no cluster to talk to: not running in a pod, and no usable kubeconfig at {looked}: {cause}. \
     Pass --kubeconfig FILE (and --context NAME){offline}"
)]
pub struct NoCluster {
    looked: String,
    cause: String,
    offline: String,
}

/// `error`, when it is [`NoCluster`], ending with `offline`: what the command offers without a
/// cluster (`, or --cluster FILE to read a saved dump`).
pub fn without_a_cluster(error: anyhow::Error, offline: &str) -> anyhow::Error {
    match error.downcast::<NoCluster>() {
        Ok(mut none) => {
            none.offline = offline.to_owned();
            none.into()
        }
        Err(other) => other,
    }
}

/// Asks the API server for its version, so that an unreachable server fails in seconds with the
/// address and the cause, instead of every watch retrying until the caller's timeout.
pub async fn check_reachable(
    client: &Client,
    url: &str,
    within: std::time::Duration,
) -> anyhow::Result<()> {
    let answer = tokio::time::timeout(within, client.apiserver_version()).await;
    let cause = match answer {
        // Any HTTP answer, even an error status or an odd body, means the server is there; the lists
        // will say what else is wrong.
        Ok(Ok(_) | Err(kube::Error::Api(_) | kube::Error::SerdeError(_))) => return Ok(()),
        Ok(Err(error)) => innermost(&error),
        Err(_) => format!("no answer within {}", humantime::format_duration(within)),
    };
    anyhow::bail!(
        "cannot reach the Kubernetes API server at {url}: {cause}. Check --kubeconfig and --context, \
         or use --cluster FILE to read a saved dump"
    )
}

/// The last cause in an error chain (`Connection refused (os error 111)`), which is the one a person can
/// act on.
fn innermost(error: &dyn std::error::Error) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// rustls refuses X.509 version 1 client certificates (what `openssl x509 -req` makes without
/// extensions) deep inside the TLS handshake, with an error that names neither the file nor the cause.
/// Said here, once, with the way out.
fn check_client_certificate(config: &Config) -> anyhow::Result<()> {
    use base64::Engine;
    let auth = &config.auth_info;
    let (pem, source) = if let Some(data) = &auth.client_certificate_data {
        let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(data.trim()) else {
            return Ok(());
        };
        (pem, "client-certificate-data".to_owned())
    } else if let Some(path) = &auth.client_certificate {
        let Ok(pem) = std::fs::read(path) else {
            return Ok(());
        };
        (pem, path.clone())
    } else {
        return Ok(());
    };
    if first_certificate(&pem).is_some_and(|der| x509_version_1(&der)) {
        anyhow::bail!(
            "the kubeconfig's client certificate ({source}) is X.509 version 1, which TLS refuses; \
             reissue it as version 3, e.g. `openssl x509 -req ... -extfile <(echo \
             'basicConstraints=CA:FALSE')`"
        );
    }
    Ok(())
}

/// The DER of the first certificate in a PEM text.
fn first_certificate(pem: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine;
    let text = std::str::from_utf8(pem).ok()?;
    let start = text.find("-----BEGIN CERTIFICATE-----")? + "-----BEGIN CERTIFICATE-----".len();
    let end = start + text[start..].find("-----END CERTIFICATE-----")?;
    let body: String = text[start..end].split_whitespace().collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// A version 1 certificate's TBSCertificate starts with its serial number; versions 2 and 3 start
/// with the explicit `[0]` version field (tag 0xA0).
fn x509_version_1(der: &[u8]) -> bool {
    /// The offset of a DER element's contents, after its tag and length.
    fn contents(der: &[u8], at: usize) -> Option<usize> {
        let first = *der.get(at + 1)?;
        if first < 0x80 {
            Some(at + 2)
        } else {
            Some(at + 2 + usize::from(first & 0x7F))
        }
    }
    let Some(tbs) = (der.first() == Some(&0x30))
        .then(|| contents(der, 0))
        .flatten()
    else {
        return false;
    };
    if der.get(tbs) != Some(&0x30) {
        return false;
    }
    contents(der, tbs)
        .and_then(|at| der.get(at))
        .is_some_and(|tag| *tag != 0xA0)
}

/// The client evictions go through. kube retries 429, 503 and 504 by default, honouring
/// `Retry-After`; for evictions a 429 is an answer (a PDB said no) and must not be retried within the
/// cycle, and transient errors are retried by the evictor against the cycle's deadline instead.
pub fn without_retries(config: &Config) -> anyhow::Result<Client> {
    let mut config = config.clone();
    config.default_retry = false;
    Client::try_from(config).context("building the Kubernetes client")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_certificates_are_told_apart() {
        // SEQUENCE { SEQUENCE { [0] { INTEGER 2 } ... } }: a version 3 TBSCertificate.
        let v3 = [
            0x30, 0x09, 0x30, 0x07, 0xA0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x00,
        ];
        // SEQUENCE { SEQUENCE { INTEGER serial ... } }: no version field, version 1.
        let v1 = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x07];
        // Long-form lengths, as real certificates have.
        let long = [0x30, 0x81, 0x05, 0x30, 0x81, 0x02, 0x02, 0x00];
        assert!(!x509_version_1(&v3));
        assert!(x509_version_1(&v1));
        assert!(x509_version_1(&long));
        assert!(!x509_version_1(&[]));
        assert!(!x509_version_1(&[0x30]));
    }

    #[test]
    fn a_version_1_client_certificate_is_named_with_the_fix() {
        use base64::Engine;
        let der = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x07];
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            base64::engine::general_purpose::STANDARD.encode(der)
        );
        let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.auth_info.client_certificate_data =
            Some(base64::engine::general_purpose::STANDARD.encode(&pem));
        let error = check_client_certificate(&config).unwrap_err().to_string();
        assert!(error.contains("X.509 version 1"), "{error}");
        assert!(error.contains("client-certificate-data"), "{error}");
        config.auth_info.client_certificate_data = None;
        assert!(check_client_certificate(&config).is_ok());
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_names_the_file() {
        let args = ClientArgs {
            kubeconfig: Some(PathBuf::from("/nonexistent/tidal-kubeconfig")),
            context: None,
        };
        let error = format!("{:#}", args.config().await.unwrap_err());
        assert!(error.contains("/nonexistent/tidal-kubeconfig"), "{error}");
    }
}
