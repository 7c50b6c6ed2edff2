//! The command line: `tidal run`, `tidal report`, `tidal timeline`, `tidal convert`, `tidal crds`,
//! `tidal completion`, `tidal webhook`, `tidal register-webhooks`. One file per command's arguments and work; this one parses and
//! dispatches.

mod convert;
mod explain;
mod pacing;
mod register;
mod report;
mod run;
mod timeline;

pub use convert::{ConvertArgs, ConvertMode};
pub use explain::{ExplainArgs, Explanation, Verdict};
pub use pacing::PacingArgs;
pub use register::RegisterArgs;
pub use report::{ReportArgs, builtin_policy, report, report_live};
pub use run::RunArgs;
pub use timeline::{TimelineArgs, timeline, timeline_live};

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::{api, controller, runtime::LogFormat};

/// `tidal --version`: the crate version, the commit and the build date (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("TIDAL_GIT_COMMIT"),
    ", built ",
    env!("TIDAL_BUILD_DATE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "tidal",
    version = VERSION,
    about = "A Kubernetes descheduler for revocable zones and rescheduling"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller against the cluster: watch, plan, evict (see docs/controller.md).
    Run(Box<RunArgs>),
    /// Show what tidal would evict, and why, without evicting anything.
    Report(ReportArgs),
    /// Simulate the next hours with the real planner: zone changes, drain starts, each eviction round
    /// and the pods it takes (takes the same input flags as `report`).
    Timeline(TimelineArgs),
    /// Explain one pod: every policy and strategy that considered it, the gate that stopped it or
    /// the round that will take it, and when (takes the same input flags as `report`).
    Explain(ExplainArgs),
    /// Print the CustomResourceDefinitions tidal installs (RevocableZone, DeschedulingPolicy).
    Crds {
        /// Print this values.schema.json instead, with its spec definitions regenerated from the CRDs
        /// (scripts/gen-crds keeps the chart's in step).
        #[arg(long, value_name = "FILE", hide = true)]
        values_schema: Option<std::path::PathBuf>,
    },
    /// Turn a Kubernetes descheduler policy (DeschedulerPolicy v1alpha2 or v1alpha1, on its own, in a
    /// ConfigMap or in the descheduler chart's values) into DeschedulingPolicies, one per profile,
    /// printed as YAML. Never looser: a setting whose loss could evict more is an error unless
    /// --allow-looser; every setting not carried over as it is is listed at the top.
    Convert(ConvertArgs),
    /// Print a shell completion script: `source <(tidal completion bash)`, or save it where your
    /// shell loads completions from.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Serve the admission webhook that keeps pods off revocable nodes they may not use (see
    /// docs/admission.md).
    Webhook(crate::webhook::WebhookArgs),
    /// Apply the admission webhook configurations once the webhook answers through its Service (the
    /// chart's install and upgrade hook), so that none is active while the webhook cannot be reached.
    RegisterWebhooks(RegisterArgs),
}

impl Command {
    /// Whether the command talks to a cluster (and so needs the async runtime).
    pub fn is_live(&self) -> bool {
        match self {
            Command::Run(_) | Command::Webhook(_) | Command::RegisterWebhooks(_) => true,
            Command::Report(args) => args.clusters.is_empty(),
            Command::Timeline(args) => args.input.clusters.is_empty(),
            Command::Explain(args) => args.input.clusters.is_empty(),
            Command::Crds { .. } | Command::Convert(_) | Command::Completion { .. } => false,
        }
    }

    /// The log level when `$TIDAL_LOG` does not say: the processes log their progress, the report
    /// only what goes wrong (unless `-v`).
    pub fn default_log_level(&self) -> &'static str {
        match self {
            Command::Run(_) | Command::Webhook(_) | Command::RegisterWebhooks(_) => "info",
            Command::Report(args) => verbosity(args.verbose),
            Command::Timeline(args) => verbosity(args.input.verbose),
            Command::Explain(args) => verbosity(args.input.verbose),
            _ => QUIET,
        }
    }

    pub fn log_format(&self) -> LogFormat {
        match self {
            Command::Run(args) => args.log_format,
            Command::Webhook(args) => args.log_format,
            _ => LogFormat::Text,
        }
    }
}

/// What the one-shot commands log without `-v`. kube's client logs every failed connection as an
/// error; the report says it once, with the address and what to do. kube's TLS layer warns on every
/// connection of a kubeconfig that skips verification.
const QUIET: &str = "warn,kube_client::client::builder=off,kube_client::client::tls=error";

/// The log level of `-v=LEVEL`, kubectl's scale: 1 to 3 progress, 4 and 5 debug, 6 and more trace.
fn verbosity(level: Option<u8>) -> &'static str {
    match level {
        None | Some(0) => QUIET,
        Some(1..=3) => "info",
        Some(4 | 5) => "debug",
        Some(_) => "trace",
    }
}

/// Runs a command that needs no cluster connection; returns what to print.
pub fn run_offline(command: &Command) -> anyhow::Result<String> {
    match command {
        Command::Crds {
            values_schema: None,
        } => Ok(api::crds_yaml()),
        Command::Crds {
            values_schema: Some(path),
        } => {
            let hand_written = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            api::chart_schema::values_schema(&hand_written)
        }
        Command::Completion { shell } => {
            let mut script = Vec::new();
            let mut cli = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cli, "tidal", &mut script);
            String::from_utf8(script).context("the completion script is not UTF-8")
        }
        Command::Convert(args) => {
            let (yaml, notes) = args.convert()?;
            if !notes.is_empty() {
                use crate::api::descheduler::Effect;
                let count = |effect| notes.iter().filter(|n| n.effect == effect).count();
                crate::runtime::logs::say(&format!(
                    "tidal convert: {} setting(s) not carried over as they are ({} looser, {} \
                     stricter, {} with the same effect); they are listed at the top of the output",
                    notes.len(),
                    count(Effect::Looser),
                    count(Effect::Stricter),
                    count(Effect::Same),
                ));
            }
            Ok(yaml)
        }
        Command::Report(args) => report(args),
        Command::Timeline(args) => timeline(args),
        Command::Explain(args) => explain::explain(args),
        Command::Run(_) => anyhow::bail!("`tidal run` needs a cluster"),
        Command::Webhook(_) => anyhow::bail!("`tidal webhook` needs a cluster"),
        Command::RegisterWebhooks(_) => anyhow::bail!("`tidal register-webhooks` needs a cluster"),
    }
}

/// Runs a command against a live cluster until it is done or `shutdown` is cancelled; returns what to
/// print (nothing for `run` and `webhook`).
pub async fn run_live(
    command: &Command,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<Option<String>> {
    use crate::runtime::client::without_a_cluster;
    match command {
        Command::Run(args) => {
            controller::run(args.controller_config()?, shutdown)
                .await
                .map_err(|e| without_a_cluster(e, run::WITHOUT_A_CLUSTER))?;
            Ok(None)
        }
        Command::Webhook(args) => {
            crate::webhook::serve(args.clone(), shutdown).await?;
            Ok(None)
        }
        Command::RegisterWebhooks(args) => register::register(args).await.map(Some),
        Command::Report(args) => report_live(args)
            .await
            .map(Some)
            .map_err(|e| without_a_cluster(e, report::READ_A_DUMP)),
        Command::Timeline(args) => timeline_live(args)
            .await
            .map(Some)
            .map_err(|e| without_a_cluster(e, report::READ_A_DUMP)),
        Command::Explain(args) => explain::explain_live(args)
            .await
            .map(Some)
            .map_err(|e| without_a_cluster(e, report::READ_A_DUMP)),
        Command::Crds { .. } | Command::Convert(_) | Command::Completion { .. } => {
            run_offline(command).map(Some)
        }
    }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{
        report::{plan_report, unknown_policy},
        *,
    };
    use crate::cluster::Snapshot;

    fn run_args(flags: &[&str]) -> RunArgs {
        let argv = ["tidal", "run"].iter().chain(flags);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Run(args) => *args,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_report_logs_only_problems_unless_asked() {
        let level = |argv: &[&str]| {
            Cli::try_parse_from(argv)
                .unwrap()
                .command
                .default_log_level()
        };
        assert!(level(&["tidal", "report", "--cluster", "x.yaml"]).starts_with("warn,"));
        assert_eq!(
            level(&["tidal", "report", "--cluster", "x.yaml", "-v"]),
            "info"
        );
        assert_eq!(level(&["tidal", "run"]), "info");
    }

    #[test]
    fn now_without_an_offset_is_explained_not_guessed() {
        let error =
            Cli::try_parse_from(["tidal", "report", "-f", "x", "--now", "2026-11-23T09:30:00"])
                .unwrap_err()
                .to_string();
        assert!(
            error.contains("has no UTC offset: write 2026-11-23T09:30:00Z"),
            "{error}"
        );
        let ok = Cli::try_parse_from([
            "tidal",
            "report",
            "-f",
            "x",
            "--now",
            "2026-11-23T10:30:00+01:00",
        ]);
        assert!(ok.is_ok());
    }

    #[test]
    fn the_grace_period_convert_names_is_a_flag_of_tidal_run() {
        let policy = serde_json::json!({"apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy", "gracePeriodSeconds": 45,
            "profiles": [{"name": "p", "plugins": {"deschedule": {"enabled": ["PodLifeTime"]}},
                "pluginConfig": [{"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60}}]}]});
        let converted =
            crate::api::descheduler::convert(&policy, &Default::default()).expect("converts");
        let note = converted
            .notes
            .iter()
            .find(|n| n.text.contains("gracePeriodSeconds 45"))
            .expect("a note on gracePeriodSeconds");
        let command = note
            .text
            .split('`')
            .nth(1)
            .expect("a command in backquotes");
        let args: Vec<&str> = command.split_whitespace().collect();
        let cli = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{command}: {e}"));
        let Command::Run(run) = cli.command else {
            panic!("{command}: not `tidal run`")
        };
        assert_eq!(run.pacing.eviction_grace_period_seconds, Some(45));
    }

    #[test]
    fn explain_takes_a_pod_and_the_report_s_input() {
        let cli = Cli::try_parse_from(["tidal", "explain", "pod", "ml/trial-1", "-f", "dump.yaml"])
            .unwrap();
        let Command::Explain(args) = cli.command else {
            unreachable!()
        };
        assert_eq!(args.target.as_deref(), Some("ml/trial-1"));
        assert!(!cli_is_live(&Command::Explain(args)));
    }

    fn cli_is_live(command: &Command) -> bool {
        command.is_live()
    }

    #[test]
    fn version_names_the_commit_and_build_date() {
        let error = Cli::try_parse_from(["tidal", "--version"]).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with(concat!("tidal ", env!("CARGO_PKG_VERSION"), " (commit ")),
            "{text}"
        );
        assert!(text.contains(", built 20"), "{text}");
    }

    #[test]
    fn completion_scripts_know_the_subcommands_and_flags() {
        for shell in ["bash", "zsh", "fish"] {
            let cli = Cli::try_parse_from(["tidal", "completion", shell]).unwrap();
            let script = run_offline(&cli.command).unwrap();
            for word in [
                "report",
                "convert",
                "cluster",
                "leader-elect-lease-duration",
            ] {
                assert!(script.contains(word), "{shell}: {word}");
            }
        }
    }

    #[test]
    fn leader_elect_needs_no_value() {
        assert!(run_args(&[]).leader_elect);
        assert!(run_args(&["--leader-elect"]).leader_elect);
        assert!(run_args(&["--leader-elect", "--eviction-qps", "2"]).leader_elect);
        assert!(!run_args(&["--leader-elect=false"]).leader_elect);
        assert!(!run_args(&["--leader-elect", "false"]).leader_elect);
    }

    #[test]
    fn flags_have_controller_runtime_names_and_keep_the_old_ones_as_aliases() {
        let new = run_args(&[
            "--leader-elect-lease-duration=20s",
            "--leader-elect-renew-deadline=12s",
            "--leader-elect-retry-period=3s",
            "--leader-elect-resource-name=l",
            "--leader-elect-resource-namespace=ns",
            "--metrics-bind-address=127.0.0.1:9000",
            "--health-probe-bind-address=127.0.0.1:9001",
        ]);
        let old = run_args(&[
            "--lease-duration=20s",
            "--renew-deadline=12s",
            "--retry-period=3s",
            "--lease-name=l",
            "--lease-namespace=ns",
            "--metrics-addr=127.0.0.1:9000",
            "--health-addr=127.0.0.1:9001",
        ]);
        assert_eq!(format!("{new:?}"), format!("{old:?}"));
        assert_eq!(new.lease_duration.as_std(), Duration::from_secs(20));
        assert_eq!(new.metrics_addr.port(), 9000);
        // The old spellings stay out of --help.
        let mut command = <Cli as clap::CommandFactory>::command();
        let help = command
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("--health-probe-bind-address"), "{help}");
        assert!(!help.contains("--health-addr"), "{help}");
    }

    fn error(flags: &[&str]) -> String {
        match run_args(flags).controller_config() {
            Ok(_) => panic!("{flags:?} accepted"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn the_retry_period_must_fit_within_the_renew_deadline() {
        assert!(error(&["--retry-period", "0s"]).contains("--leader-elect-retry-period"));
        assert!(error(&["--retry-period", "10s"]).contains("--leader-elect-retry-period"));
        assert!(
            error(&["--retry-period", "15s", "--renew-deadline", "10s"])
                .contains("--leader-elect-retry-period")
        );
        assert!(
            run_args(&["--retry-period", "9s"])
                .controller_config()
                .is_ok()
        );
        // Without election the lease flags are not used.
        assert!(
            run_args(&["--leader-elect", "false", "--retry-period", "0s"])
                .controller_config()
                .is_ok()
        );
    }

    #[test]
    fn the_eviction_qps_must_be_a_usable_rate() {
        for qps in ["0", "-1", "1e-20", "NaN", "inf"] {
            let flag = format!("--eviction-qps={qps}");
            assert!(error(&[&flag]).contains("--eviction-qps"), "{qps}");
        }
        assert!(
            run_args(&["--eviction-qps", "0.5"])
                .controller_config()
                .is_ok()
        );
    }

    #[test]
    fn an_unknown_policy_name_lists_the_existing_ones_and_the_likely_one() {
        let names = ["nightly-tdm", "rebalance"];
        let error = unknown_policy("nightly-tmd", names.into_iter());
        assert!(error.contains("nightly-tdm, rebalance"), "{error}");
        assert!(error.contains("did you mean \"nightly-tdm\""), "{error}");
        let error = unknown_policy("something-else", names.into_iter());
        assert!(!error.contains("did you mean"), "{error}");
    }

    #[test]
    fn report_for_a_named_policy_fails_when_the_input_has_no_policy() {
        let cli = Cli::try_parse_from([
            "tidal",
            "report",
            "--cluster",
            "x.yaml",
            "--policy",
            "nightly",
        ])
        .unwrap();
        let Command::Report(args) = cli.command else {
            unreachable!()
        };
        let error = plan_report(&Snapshot::default(), &args)
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"nightly\""), "{error}");
        // Without --policy, the built-in policy stands in.
        let cli = Cli::try_parse_from(["tidal", "report", "--cluster", "x.yaml"]).unwrap();
        let Command::Report(args) = cli.command else {
            unreachable!()
        };
        let (cycle, notes) = plan_report(&Snapshot::default(), &args).unwrap();
        assert_eq!(cycle.plans.len(), 1);
        assert_eq!(notes.len(), 1);
    }
}
