//! `tidal convert`: a Kubernetes descheduler policy as DeschedulingPolicies.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::api::{self, GoDuration, PolicyMode};

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The descheduler policy file (YAML or JSON; `-` reads stdin), as given to the descheduler's
    /// `--policy-config-file`.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: PathBuf,
    /// Mode of the converted policies. DryRun by default: read `tidal report` before evicting.
    #[arg(long, value_enum, default_value_t = ConvertMode::DryRun)]
    pub mode: ConvertMode,
    /// The descheduler's `--descheduling-interval`, as the policies' interval (default: 5m).
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<GoDuration>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ConvertMode {
    #[value(name = "DryRun")]
    DryRun,
    #[value(name = "Evict")]
    Evict,
}

impl ConvertArgs {
    /// The YAML to print: the notes as comments, then one document per policy.
    pub fn convert(&self) -> anyhow::Result<(String, Vec<String>)> {
        let text = if self.filename.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading stdin")?
        } else {
            std::fs::read_to_string(&self.filename)
                .with_context(|| format!("reading {}", self.filename.display()))?
        };
        let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
            .with_context(|| format!("{} is not YAML or JSON", self.filename.display()))?;
        let policies: Vec<&serde_json::Value> = documents
            .iter()
            .filter(|d| api::descheduler::is_descheduler_policy(d))
            .collect();
        if policies.is_empty() {
            anyhow::bail!(
                "{}: not a descheduler policy (no document with apiVersion {} and kind {})",
                self.filename.display(),
                api::descheduler::API_VERSION,
                api::descheduler::KIND
            );
        }
        let options = api::descheduler::ConvertOptions {
            mode: match self.mode {
                ConvertMode::DryRun => PolicyMode::DryRun,
                ConvertMode::Evict => PolicyMode::Evict,
            },
            interval: self.interval.as_ref().map(ToString::to_string),
        };
        let mut converted = api::descheduler::Converted {
            policies: Vec::new(),
            notes: Vec::new(),
        };
        for policy in policies {
            let one = api::descheduler::convert(policy, &options)
                .map_err(|e| anyhow::anyhow!("{}: {e}", self.filename.display()))?;
            converted.policies.extend(one.policies);
            converted.notes.extend(one.notes);
        }
        let mut out = format!(
            "# Converted by `tidal convert` from {}.\n",
            self.filename.display()
        );
        if converted.notes.is_empty() {
            out.push_str("# Every setting was carried over.\n");
        } else {
            out.push_str("# Not carried over, or different in tidal:\n");
            for note in &converted.notes {
                out.push_str(&format!("#   - {note}\n"));
            }
        }
        for policy in &converted.policies {
            out.push_str("---\n");
            let yaml = serde_saphyr::to_string(policy).context("printing the converted policy")?;
            out.push_str(yaml.trim_end());
            out.push('\n');
        }
        Ok((out, converted.notes))
    }
}
