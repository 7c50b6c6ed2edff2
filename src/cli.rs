//! The command line: `tidal run`, `tidal report`, `tidal timeline`, `tidal crds`, `tidal webhook`.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;
use clap::{ArgAction, Args, Parser, Subcommand};
use jiff::{SignedDuration, Timestamp};

use crate::{
    api::{
        self, DeschedulingPolicySpec, GoDuration, PolicyMode, args::TdmArgs, policy::Strategies,
    },
    cluster::{ClusterCache, PolicyInfo, Snapshot},
    controller::{self, ControllerConfig, evictor::EvictorConfig, taints::KeeperSettings},
    planner::{self, CyclePlan, Verification},
    report::{Format, Report, dump::Dump, timeline},
    runtime::{
        ClientArgs, LogFormat, client,
        leader::{self, LeaseConfig},
    },
};

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
    /// Print the CustomResourceDefinitions tidal installs (RevocableZone, DeschedulingPolicy).
    Crds,
    /// Turn a Kubernetes descheduler policy (descheduler/v1alpha2 DeschedulerPolicy) into
    /// DeschedulingPolicies, one per profile, printed as YAML; what cannot be carried over is listed
    /// at the top of the output and on stderr.
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
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A saved cluster: `kubectl get nodes,pods,poddisruptionbudgets,podgroups,revocablezones,deschedulingpolicies -A -o yaml`
    /// output, multi-document YAML, or JSON. Repeat to combine files; a folder reads its .yaml, .yml
    /// and .json files, `-` reads stdin (as kubectl's `-f`). Namespaces and metrics.k8s.io
    /// NodeMetrics/PodMetrics lists (`kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes`) are read
    /// too. Without it, tidal reads the live cluster (in-cluster credentials, else the kubeconfig).
    #[arg(
        short = 'f',
        long = "cluster",
        visible_alias = "filename",
        value_name = "FILE",
        conflicts_with_all = ["kubeconfig", "context"]
    )]
    pub clusters: Vec<PathBuf>,
    /// The most read from one --cluster file (a quantity: 4Gi, 500Mi); a larger file, or an endless
    /// stream such as /dev/zero, is refused rather than read without bound.
    #[arg(long, value_name = "BYTES", default_value = "4Gi", value_parser = parse_byte_size)]
    pub max_input_size: u64,
    /// Live cluster only: how to reach it.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Live cluster only: check each planned eviction with a server-side dry run (`dryRun=All`) and
    /// list refusals (a PodDisruptionBudget's 429, ...) as skipped, with gate `pdb` and the like.
    #[arg(long, conflicts_with = "clusters")]
    pub verify: bool,
    /// Live cluster only: give up if listing the cluster takes longer.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub timeout: GoDuration,
    /// The instant to plan for (RFC 3339, e.g. 2026-11-22T23:30:00Z). Default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<Timestamp>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Only plan these policies (by name). Default: every DeschedulingPolicy in the input.
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// Log progress (listing, watches) on stderr; by default only warnings and errors, so that the
    /// report is all a reader sees.
    #[arg(short, long)]
    pub verbose: bool,
}

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

#[derive(Debug, Args)]
pub struct TimelineArgs {
    #[command(flatten)]
    pub input: ReportArgs,
    /// How far ahead to simulate (e.g. 24h, 90m, 168h); at most 7 days.
    #[arg(long, value_name = "DURATION", default_value = "24h")]
    pub span: GoDuration,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Elect a leader through a Lease, so that only one replica evicts. `--leader-elect` alone means
    /// true, as in controller-runtime; `--leader-elect=false` runs a single replica without a Lease.
    #[arg(
        long,
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = false,
        action = ArgAction::Set
    )]
    pub leader_elect: bool,
    /// Namespace of the Lease (default: $POD_NAMESPACE, the namespace tidal runs in).
    #[arg(
        long = "leader-elect-resource-namespace",
        alias = "lease-namespace",
        value_name = "NS",
        env = "POD_NAMESPACE",
        default_value = "tidal-system"
    )]
    pub lease_namespace: String,
    /// Name of the Lease the replicas share.
    #[arg(
        long = "leader-elect-resource-name",
        alias = "lease-name",
        value_name = "NAME",
        default_value = "tidal-controller"
    )]
    pub lease_name: String,
    /// This replica's name in the Lease (default: $POD_NAME, else <hostname>_<pid>).
    #[arg(long, value_name = "ID", env = "POD_NAME")]
    pub identity: Option<String>,
    /// How long a lease stays valid without renewal; standbys wait this long before taking over.
    #[arg(
        long = "leader-elect-lease-duration",
        alias = "lease-duration",
        value_name = "DURATION",
        default_value = "15s"
    )]
    pub lease_duration: GoDuration,
    /// The leader stops acting if it could not renew for this long (less than the lease duration).
    #[arg(
        long = "leader-elect-renew-deadline",
        alias = "renew-deadline",
        value_name = "DURATION",
        default_value = "10s"
    )]
    pub renew_deadline: GoDuration,
    /// Time between lease renewals / acquisition attempts.
    #[arg(
        long = "leader-elect-retry-period",
        alias = "retry-period",
        value_name = "DURATION",
        default_value = "2s"
    )]
    pub retry_period: GoDuration,
    /// Where to serve Prometheus metrics (`/metrics`).
    #[arg(
        long = "metrics-bind-address",
        alias = "metrics-addr",
        value_name = "ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_addr: SocketAddr,
    /// Where to serve `/healthz` and `/readyz` (ready once every watched kind has listed).
    #[arg(
        long = "health-probe-bind-address",
        alias = "health-addr",
        value_name = "ADDR",
        default_value = "0.0.0.0:8081"
    )]
    pub health_addr: SocketAddr,
    /// Eviction requests per second (sustained).
    #[arg(long, value_name = "QPS", default_value_t = 5.0)]
    pub eviction_qps: f64,
    /// Eviction requests allowed in a burst above the QPS.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub eviction_burst: u32,
    /// Eviction requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub eviction_concurrency: usize,
    /// Evictions not done by then (retries included) are abandoned until the next cycle.
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub cycle_timeout: GoDuration,
    /// Server-side dry-run evictions a cycle sends to verify the plans of DryRun policies (all of
    /// them together, in plan order), paced at --eviction-qps by a bucket of their own, so they never
    /// delay real evictions. The rest of a DryRun plan is reported as planned and unverified.
    #[arg(long, value_name = "N", default_value_t = controller::cycle::DEFAULT_DRY_RUN_VERIFY_PER_CYCLE)]
    pub dry_run_verify_per_cycle: usize,
    /// A pod tidal evicted counts as leaving until it is gone, or until this long has passed.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub in_flight_ttl: GoDuration,
    /// On SIGTERM, in-flight requests get this long before they are abandoned.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub shutdown_grace: GoDuration,
    /// Keep a `tidal.dev/zone-closed:NoSchedule` taint on the nodes of closed zones (zones can opt out
    /// with `spec.taintWhenClosed: false`). Needs `patch` on nodes.
    #[arg(long, value_name = "BOOL", env = "TIDAL_ZONE_TAINTS", default_value_t = true, action = ArgAction::Set)]
    pub zone_taints: bool,
    /// How often to read measured usage from metrics.k8s.io (metrics-server) while a policy's
    /// utilization strategy uses `usage.source: Metrics`; `0s` never reads it.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub usage_poll_interval: GoDuration,
    /// Log lines as text or as JSON objects (stderr; level from $TIDAL_LOG, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Below this a token takes so long to refill that the limit is a misconfiguration, not a pace.
const MIN_EVICTION_QPS: f64 = 0.001;

impl RunArgs {
    pub fn controller_config(&self) -> anyhow::Result<ControllerConfig> {
        if self.leader_elect {
            let (lease, renew, retry) = (
                self.lease_duration.as_std(),
                self.renew_deadline.as_std(),
                self.retry_period.as_std(),
            );
            if renew >= lease {
                anyhow::bail!(
                    "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
                );
            }
            // A renewal every retry period must fit within the renew deadline, or leadership lapses
            // between two renewals; zero would renew in a busy loop.
            if retry.is_zero() || retry >= renew {
                anyhow::bail!(
                    "--leader-elect-retry-period must be more than zero and shorter than \
                     --leader-elect-renew-deadline"
                );
            }
        }
        if !(self.eviction_qps.is_finite() && self.eviction_qps >= MIN_EVICTION_QPS) {
            anyhow::bail!(
                "--eviction-qps must be a number of at least {MIN_EVICTION_QPS} (one request every 1000s)"
            );
        }
        let mut config = ControllerConfig::new(self.metrics_addr, self.health_addr);
        config.client = self.client.clone();
        config.lease = self.leader_elect.then(|| LeaseConfig {
            lease_duration: self.lease_duration.as_std(),
            renew_deadline: self.renew_deadline.as_std(),
            retry_period: self.retry_period.as_std(),
            ..LeaseConfig::new(
                Some(self.lease_namespace.clone())
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or_else(|| "tidal-system".to_owned()),
                self.lease_name.clone(),
                self.identity
                    .clone()
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(leader::default_identity),
            )
        });
        config.eviction = EvictorConfig {
            qps: self.eviction_qps,
            burst: self.eviction_burst,
            concurrency: self.eviction_concurrency.max(1),
            ..EvictorConfig::default()
        };
        config.cycle.timeout = self.cycle_timeout.as_std();
        config.cycle.in_flight_ttl = self.in_flight_ttl.as_std();
        config.cycle.dry_run_verify_per_cycle = self.dry_run_verify_per_cycle;
        config.shutdown_grace = self.shutdown_grace.as_std();
        let usage_poll = self.usage_poll_interval.as_std();
        config.usage_poll = (!usage_poll.is_zero()).then_some(usage_poll);
        if self.zone_taints {
            config.zone_taints = Some(KeeperSettings::default());
        }
        Ok(config)
    }
}

impl Command {
    /// Whether the command talks to a cluster (and so needs the async runtime).
    pub fn is_live(&self) -> bool {
        match self {
            Command::Run(_) | Command::Webhook(_) => true,
            Command::Report(args) => args.clusters.is_empty(),
            Command::Timeline(args) => args.input.clusters.is_empty(),
            Command::Crds | Command::Convert(_) | Command::Completion { .. } => false,
        }
    }

    /// The log level when `$TIDAL_LOG` does not say: the processes log their progress, the report
    /// only what goes wrong (unless `-v`).
    pub fn default_log_level(&self) -> &'static str {
        match self {
            Command::Run(_) | Command::Webhook(_) => "info",
            Command::Report(args) if args.verbose => "info",
            Command::Timeline(args) if args.input.verbose => "info",
            // kube's client logs every failed connection as an error; the report says it once, with
            // the address and what to do.
            _ => "warn,kube_client::client::builder=off",
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

/// Runs a command that needs no cluster connection; returns what to print.
pub fn run_offline(command: &Command) -> anyhow::Result<String> {
    match command {
        Command::Crds => Ok(api::crds_yaml()),
        Command::Completion { shell } => {
            let mut script = Vec::new();
            let mut cli = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cli, "tidal", &mut script);
            String::from_utf8(script).context("the completion script is not UTF-8")
        }
        Command::Convert(args) => {
            let (yaml, notes) = args.convert()?;
            if !notes.is_empty() {
                eprintln!(
                    "tidal convert: {} setting(s) not carried over or different in tidal; they are \
                     listed at the top of the output",
                    notes.len()
                );
            }
            Ok(yaml)
        }
        Command::Report(args) => report(args),
        Command::Timeline(args) => timeline(args),
        Command::Run(_) => anyhow::bail!("`tidal run` needs a cluster"),
        Command::Webhook(_) => anyhow::bail!("`tidal webhook` needs a cluster"),
    }
}

/// Runs a command against a live cluster until it is done or `shutdown` is cancelled; returns what to
/// print (nothing for `run` and `webhook`).
pub async fn run_live(
    command: &Command,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<Option<String>> {
    match command {
        Command::Run(args) => {
            controller::run(args.controller_config()?, shutdown).await?;
            Ok(None)
        }
        Command::Webhook(args) => {
            crate::webhook::run(args.clone(), shutdown).await?;
            Ok(None)
        }
        Command::Report(args) => report_live(args).await.map(Some),
        Command::Timeline(args) => timeline_live(args).await.map(Some),
        Command::Crds | Command::Convert(_) | Command::Completion { .. } => {
            run_offline(command).map(Some)
        }
    }
}

pub fn report(args: &ReportArgs) -> anyhow::Result<String> {
    let mut dump = Dump::load_capped(&args.clusters, args.max_input_size)?;
    let snapshot = dump.cache.snapshot();
    let (cycle, mut notes) = plan_report(&snapshot, args)?;
    notes.extend(dump.ignored_note());
    notes.append(&mut dump.warnings);
    render_report(&snapshot, &cycle, &Verification::default(), notes, args)
}

/// `tidal report` against the live cluster: one list of everything, one plan, no eviction; with
/// `--verify`, a server-side dry-run eviction per planned eviction.
/// How long `tidal report` waits for the API server's first answer before saying it cannot reach it.
const REACHABLE_WITHIN: Duration = Duration::from_secs(10);

pub async fn report_live(args: &ReportArgs) -> anyhow::Result<String> {
    let config = args.client.config().await?;
    let url = config.cluster_url.to_string();
    let evictions = client::without_retries(&config)?;
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let timeout = args.timeout.as_std().max(Duration::from_secs(1));
    client::check_reachable(&client, &url, timeout.min(REACHABLE_WITHIN)).await?;
    let shared = controller::oneshot::live_cache(client, timeout).await?;
    let snapshot = shared.write().snapshot();
    let (mut cycle, notes) = plan_report(&snapshot, args)?;
    let verification = if args.verify {
        controller::oneshot::verify(evictions, &mut cycle, EvictorConfig::default(), timeout).await
    } else {
        Verification::default()
    };
    render_report(&snapshot, &cycle, &verification, notes, args)
}

/// `tidal timeline` on saved clusters.
pub fn timeline(args: &TimelineArgs) -> anyhow::Result<String> {
    let span = timeline_span(args)?;
    let mut dump = Dump::load_capped(&args.input.clusters, args.input.max_input_size)?;
    let snapshot = dump.cache.snapshot();
    let (policies, mut notes) = select_policies(&snapshot, &args.input)?;
    notes.extend(dump.ignored_note());
    notes.append(&mut dump.warnings);
    Ok(render_timeline(
        &mut dump.cache,
        &policies,
        notes,
        span,
        &args.input,
    ))
}

/// `tidal timeline` against the live cluster: one list of everything, then the same simulation.
pub async fn timeline_live(args: &TimelineArgs) -> anyhow::Result<String> {
    let span = timeline_span(args)?;
    let config = args.input.client.config().await?;
    let url = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let timeout = args.input.timeout.as_std().max(Duration::from_secs(1));
    client::check_reachable(&client, &url, timeout.min(REACHABLE_WITHIN)).await?;
    let shared = controller::oneshot::live_cache(client, timeout).await?;
    let snapshot = shared.write().snapshot();
    let (policies, notes) = select_policies(&snapshot, &args.input)?;
    let mut cache = shared.write();
    Ok(render_timeline(
        &mut cache,
        &policies,
        notes,
        span,
        &args.input,
    ))
}

/// The span, checked along with the flags `report` has that the timeline cannot honour.
fn timeline_span(args: &TimelineArgs) -> anyhow::Result<SignedDuration> {
    if args.input.verify {
        anyhow::bail!(
            "--verify checks one plan against the API server; the timeline has no use for it"
        );
    }
    if args.input.output == Format::Markdown {
        anyhow::bail!("the timeline prints -o table or -o json");
    }
    let span = SignedDuration::try_from(args.span.as_std()).unwrap_or(SignedDuration::MAX);
    if span.is_zero() || span > timeline::MAX_SPAN {
        anyhow::bail!("--span must be more than zero and at most 7 days (168h)");
    }
    Ok(span)
}

fn render_timeline(
    cache: &mut ClusterCache,
    policies: &[Arc<PolicyInfo>],
    notes: Vec<String>,
    span: SignedDuration,
    args: &ReportArgs,
) -> String {
    let now = args.now.unwrap_or_else(Timestamp::now);
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    let mut timeline = timeline::simulate(cache, &refs, now, span);
    timeline.warnings.extend(notes);
    match args.output {
        Format::Json => timeline.to_json(),
        Format::Yaml => timeline.to_yaml(),
        Format::Table | Format::Wide | Format::Markdown => timeline.to_table(),
    }
}

fn render_report(
    snapshot: &Snapshot,
    cycle: &CyclePlan,
    verification: &Verification,
    notes: Vec<String>,
    args: &ReportArgs,
) -> anyhow::Result<String> {
    let mut report = Report::from_cycle(cycle).with_verification(verification);
    let (policies, _) = select_policies(snapshot, args)?;
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    report.add_schedule(snapshot, &refs, cycle);
    report.warnings.extend(notes);
    Ok(report.render(args.output))
}

/// Plans the policies `args` selects (or the built-in one) on `snapshot`; returns notes for the report.
fn plan_report(snapshot: &Snapshot, args: &ReportArgs) -> anyhow::Result<(CyclePlan, Vec<String>)> {
    let now = args.now.unwrap_or_else(Timestamp::now);
    let (policies, notes) = select_policies(snapshot, args)?;
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    let cycle = planner::plan_all(snapshot, &refs, now);
    Ok((cycle, notes))
}

/// The policies `args` selects from the snapshot, or the built-in one; with notes for the output.
fn select_policies(
    snapshot: &Snapshot,
    args: &ReportArgs,
) -> anyhow::Result<(Vec<Arc<PolicyInfo>>, Vec<String>)> {
    let builtin = builtin_policy();
    let mut notes = Vec::new();
    let policies: Vec<Arc<PolicyInfo>> = if snapshot.policies.is_empty() {
        if let Some(wanted) = args.policies.first() {
            anyhow::bail!(
                "no DeschedulingPolicy named {wanted:?} in the input (it has no DeschedulingPolicy at all)"
            );
        }
        notes.push(format!(
            "no DeschedulingPolicy in the input: using the built-in policy {:?} (DryRun, tdm only)",
            builtin.name
        ));
        vec![Arc::new(builtin)]
    } else {
        for wanted in &args.policies {
            if !snapshot.policies.contains_key(wanted) {
                anyhow::bail!(
                    "{}",
                    unknown_policy(wanted, snapshot.policies.keys().map(String::as_str))
                );
            }
        }
        snapshot
            .policies
            .values()
            .filter(|p| args.policies.is_empty() || args.policies.contains(&p.name))
            .cloned()
            .collect()
    };
    Ok((policies, notes))
}

/// `4Gi`, `500Mi`, `1000000`: a positive Kubernetes quantity of bytes.
fn parse_byte_size(text: &str) -> Result<u64, String> {
    let quantity = k8s_openapi::apimachinery::pkg::api::resource::Quantity(text.to_owned());
    match crate::cluster::quantity::value(&quantity) {
        Ok(bytes) if bytes > 0 => Ok(bytes.unsigned_abs()),
        Ok(_) => Err("must be more than 0 bytes".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}

/// Names the policies that exist, and the likely one if the name looks mistyped.
fn unknown_policy<'a>(wanted: &str, existing: impl Iterator<Item = &'a str>) -> String {
    let existing: Vec<&str> = existing.collect();
    let hint = api::validation::did_you_mean(wanted, existing.iter().copied())
        .map_or(String::new(), |name| format!("; did you mean {name:?}?"));
    format!(
        "no DeschedulingPolicy named {wanted:?} in the input (it has: {}){hint}",
        existing.join(", ")
    )
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
                ..Default::default()
            },
            defaults: Default::default(),
            limits: Default::default(),
            protections: Default::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
