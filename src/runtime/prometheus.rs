//! Node usage from Prometheus, for the utilization strategies' `usage.source: Prometheus`: the
//! Prometheus HTTP API's instant query (`GET /api/v1/query`), with a bearer token, answers recorded
//! in the shared cache per query. Polled like metrics.k8s.io, and only while a policy reads a query.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use anyhow::Context;
use clap::Args;
use jiff::Timestamp;
use kube::Client;
use serde::Deserialize;
use tracing::{info, warn};

use crate::cluster::{MetricSample, SharedCache};

/// Where Prometheus is: flattened into `tidal run` and the commands that read a live cluster.
#[derive(Debug, Clone, Default, Args)]
pub struct PrometheusArgs {
    /// Prometheus' base URL (e.g. http://prometheus-operated.monitoring:9090), for policies whose
    /// utilization strategies use `usage.source: Prometheus`.
    #[arg(long, value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// A file holding the bearer token sent to Prometheus (read again as it changes, e.g. a
    /// mounted Secret or a projected service-account token).
    #[arg(long, value_name = "PATH", requires = "prometheus_url")]
    pub prometheus_token_file: Option<PathBuf>,
    /// A PEM file of the CA that signed Prometheus' certificate (default: the system's roots).
    #[arg(long, value_name = "PATH", requires = "prometheus_url")]
    pub prometheus_ca_file: Option<PathBuf>,
}

/// A Prometheus HTTP API to ask, and the token file read for each request (so that a rotated token is
/// picked up; its trailing newline, as `kubectl create secret` and editors leave it, is not sent).
#[derive(Clone)]
pub struct Prometheus {
    client: Client,
    token_file: Option<PathBuf>,
}

impl PrometheusArgs {
    /// The client, when a URL is given.
    pub fn client(&self) -> anyhow::Result<Option<Prometheus>> {
        let Some(url) = &self.prometheus_url else {
            return Ok(None);
        };
        let uri: http::Uri = url
            .parse()
            .with_context(|| format!("--prometheus-url {url:?} is not a URL"))?;
        let mut config = kube::Config::new(uri);
        if let Some(file) = &self.prometheus_ca_file {
            let pem = std::fs::read(file)
                .with_context(|| format!("reading --prometheus-ca-file {}", file.display()))?;
            let certificates = pem_certificates(&pem);
            if certificates.is_empty() {
                anyhow::bail!(
                    "--prometheus-ca-file {}: no PEM certificate in it",
                    file.display()
                );
            }
            config.root_cert = Some(certificates);
        }
        let client = Client::try_from(config).context("building the Prometheus client")?;
        Ok(Some(Prometheus {
            client,
            token_file: self.prometheus_token_file.clone(),
        }))
    }
}

/// The DER bytes of each `CERTIFICATE` block of a PEM file.
fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line == "-----BEGIN CERTIFICATE-----" {
            body = Some(String::new());
        } else if line == "-----END CERTIFICATE-----" {
            if let Some(der) = body
                .take()
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            {
                out.push(der);
            }
        } else if let Some(body) = &mut body {
            body.push_str(line);
        }
    }
    out
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    result: Vec<Series>,
}

#[derive(Deserialize)]
struct Series {
    metric: BTreeMap<String, String>,
    /// `[unix seconds, "value"]`.
    value: (f64, String),
}

/// Reads an instant query's answer as the descheduler does: a vector, every sample labelled
/// `instance` (the node's name) with a value in [0, 1]; anything else fails the whole answer, so that
/// a strategy never classifies nodes on part of the picture.
pub fn read_answer(body: &str) -> Result<BTreeMap<String, f64>, String> {
    let answer: Answer =
        serde_json::from_str(body).map_err(|e| format!("not a Prometheus API answer: {e}"))?;
    if answer.status != "success" {
        return Err(format!(
            "Prometheus answered {}: {}",
            answer.status,
            answer.error.unwrap_or_default()
        ));
    }
    let data = answer
        .data
        .ok_or_else(|| "Prometheus answered no data".to_owned())?;
    if data.result_type != "vector" {
        return Err(format!(
            "the query gives a {}, not a vector (one sample per node)",
            data.result_type
        ));
    }
    let mut out = BTreeMap::new();
    for series in data.result {
        let node = series
            .metric
            .get("instance")
            .ok_or_else(|| "a sample has no `instance` label naming its node".to_owned())?;
        let value: f64 = series
            .value
            .1
            .parse()
            .map_err(|_| format!("{node}: {:?} is not a number", series.value.1))?;
        if !(0.0..=1.0).contains(&value) {
            return Err(format!("{node}: {value} is outside [0, 1]"));
        }
        out.insert(node.clone(), value);
    }
    Ok(out)
}

/// `q` as a URL query value.
fn encode(q: &str) -> String {
    let mut out = String::with_capacity(q.len() * 3);
    for byte in q.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// One instant query, now.
pub async fn query(prometheus: &Prometheus, q: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut request = http::Request::get(format!("/api/v1/query?query={}", encode(q)));
    if let Some(file) = &prometheus.token_file {
        let token = std::fs::read_to_string(file)
            .map_err(|e| format!("reading the token file {}: {e}", file.display()))?;
        request = request.header(
            http::header::AUTHORIZATION,
            format!("Bearer {}", token.trim()),
        );
    }
    let request = request
        .body(Vec::new())
        .map_err(|e| format!("the token file holds what no header can: {e}"))?;
    let body = prometheus
        .client
        .request_text(request)
        .await
        .map_err(|error| match error {
            kube::Error::Api(status) => format!(
                "Prometheus answered HTTP {}: {}",
                status.code, status.message
            ),
            other => {
                let mut current: &dyn std::error::Error = &other;
                while let Some(source) = current.source() {
                    current = source;
                }
                format!("cannot reach Prometheus: {current}")
            }
        })?;
    read_answer(&body)
}

/// The queries the cache's policies read.
fn wanted(shared: &SharedCache) -> Vec<String> {
    let mut queries: Vec<String> = shared
        .read()
        .policies()
        .values()
        .flat_map(|p| p.spec.strategies.prometheus_queries())
        .collect();
    queries.sort();
    queries.dedup();
    queries
}

/// Asks every query the policies read once, and records the answers (or why there is none).
pub async fn poll_once(prometheus: &Prometheus, shared: &SharedCache) {
    let queries = wanted(shared);
    for q in &queries {
        let values = query(prometheus, q).await;
        if let Err(error) = &values {
            warn!(query = %q, %error, "Prometheus query failed; strategies reading it evict nothing");
        }
        shared.write().record_node_metric(
            q,
            MetricSample {
                at: Timestamp::now(),
                values,
            },
        );
    }
    shared.write().retain_node_metrics(&queries);
}

/// Polls forever, every `interval`, while some policy reads a query.
pub async fn poll(prometheus: Prometheus, shared: SharedCache, interval: Duration) {
    info!(
        ?interval,
        "reading node usage from Prometheus for the policies that ask for it"
    );
    loop {
        poll_once(&prometheus, &shared).await;
        tokio::time::sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_the_descheduler_reads_them() {
        let ok = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"instance":"n1","job":"x"},"value":[1700000000.5,"0.85"]},
            {"metric":{"instance":"n2"},"value":[1700000000.5,"0"]}]}}"#;
        assert_eq!(
            read_answer(ok).unwrap(),
            BTreeMap::from([("n1".to_owned(), 0.85), ("n2".to_owned(), 0.0)])
        );
        for (bad, says) in [
            (
                r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
                "not a vector",
            ),
            (
                r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.5"]}]}}"#,
                "instance",
            ),
            (
                r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"n1"},"value":[1,"1.5"]}]}}"#,
                "outside [0, 1]",
            ),
            (
                r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#,
                "parse error",
            ),
            ("<html>", "not a Prometheus API answer"),
        ] {
            let error = read_answer(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn queries_are_encoded_for_the_url() {
        assert_eq!(
            encode("avg by (instance) (rate(x{a=\"b\"}[5m]))"),
            "avg%20by%20%28instance%29%20%28rate%28x%7Ba%3D%22b%22%7D%5B5m%5D%29%29"
        );
    }
}
