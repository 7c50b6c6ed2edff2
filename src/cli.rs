//! The command line: `tidal report`, `tidal crds`, `tidal webhook`.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use jiff::Timestamp;

use crate::{
    api::{self, DeschedulingPolicySpec, PolicyMode, policy::Strategies},
    cluster::PolicyInfo,
    dump::Dump,
    plan,
    report::{Format, Report},
    strategies::tdm::TdmArgs,
};

#[derive(Debug, Parser)]
#[command(
    name = "tidal",
    version,
    about = "A Kubernetes descheduler for revocable zones and rescheduling"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what tidal would evict, and why, without evicting anything.
    Report(ReportArgs),
    /// Print the CustomResourceDefinitions tidal installs (RevocableZone, DeschedulingPolicy).
    Crds,
    /// Serve the admission webhook that keeps pods off revocable nodes they may not use (see
    /// docs/admission.md).
    Webhook(crate::admission::WebhookArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A saved cluster: `kubectl get nodes,pods,poddisruptionbudgets,podgroups,revocablezones,deschedulingpolicies -A -o yaml`
    /// output, multi-document YAML, or JSON. Repeat to combine files.
    #[arg(long = "cluster", value_name = "FILE", required = true)]
    pub clusters: Vec<PathBuf>,
    /// The instant to plan for (RFC 3339, e.g. 2026-11-22T23:30:00Z). Default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<Timestamp>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Only plan these policies (by name). Default: every DeschedulingPolicy in the input.
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl Command {
    /// Whether the command talks to a cluster (and so needs the async runtime).
    pub fn is_live(&self) -> bool {
        match self {
            Command::Webhook(_) => true,
            Command::Report(_) | Command::Crds => false,
        }
    }

    pub fn log_format(&self) -> LogFormat {
        match self {
            Command::Webhook(args) => args.log_format,
            _ => LogFormat::Text,
        }
    }
}

/// Runs a command that needs no cluster connection; returns what to print.
pub fn run_offline(command: &Command) -> anyhow::Result<String> {
    match command {
        Command::Crds => Ok(api::crds_yaml()),
        Command::Report(args) => report(args),
        Command::Webhook(_) => anyhow::bail!("`tidal webhook` needs a cluster"),
    }
}

/// Runs a command against a live cluster until it is done or `shutdown` is cancelled; returns what to
/// print (nothing for servers).
pub async fn run_live(
    command: &Command,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<Option<String>> {
    match command {
        Command::Webhook(args) => {
            crate::admission::run(args.clone(), shutdown).await?;
            Ok(None)
        }
        Command::Report(_) | Command::Crds => run_offline(command).map(Some),
    }
}

pub fn report(args: &ReportArgs) -> anyhow::Result<String> {
    let mut dump = Dump::load(&args.clusters)?;
    let snapshot = dump.cache.snapshot();
    let now = args.now.unwrap_or_else(Timestamp::now);
    let builtin = builtin_policy();
    let mut notes = Vec::new();
    let policies: Vec<&PolicyInfo> = if snapshot.policies.is_empty() {
        notes.push(format!(
            "no DeschedulingPolicy in the input: using the built-in policy {:?} (DryRun, tdm only)",
            builtin.name
        ));
        vec![&builtin]
    } else {
        for wanted in &args.policies {
            if !snapshot.policies.contains_key(wanted) {
                anyhow::bail!("no DeschedulingPolicy named {wanted:?} in the input");
            }
        }
        snapshot
            .policies
            .values()
            .map(AsRef::as_ref)
            .filter(|p: &&PolicyInfo| args.policies.is_empty() || args.policies.contains(&p.name))
            .collect()
    };
    let cycle = plan::plan_all(&snapshot, &policies, now);
    let mut report = Report::from_cycle(&cycle);
    report.warnings.extend(notes);
    Ok(report.render(args.output))
}

/// What `tidal report` plans with when the input holds no policy: TDM only, in dry-run mode.
pub fn builtin_policy() -> PolicyInfo {
    PolicyInfo::new(
        "builtin-tdm".to_owned(),
        None,
        DeschedulingPolicySpec {
            interval: api::GoDuration::from_secs(300),
            mode: PolicyMode::DryRun,
            strategies: Strategies {
                tdm: Some(TdmArgs::default()),
            },
            defaults: Default::default(),
            limits: Default::default(),
            namespaces: Default::default(),
        },
    )
}

/// Writes `text` to stdout, treating a closed pipe (`tidal report | head`) as success.
pub fn print(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}
