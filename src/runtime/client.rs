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
        config(self.kubeconfig.as_deref(), self.context.as_deref()).await
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
            let file = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .context("reading the kubeconfig")?,
        None => match Config::incluster() {
            Ok(config) => config,
            Err(_) => Config::infer()
                .await
                .context("no in-cluster service account and no usable kubeconfig")?,
        },
    };
    Ok(config)
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
