//! `tidal report`: what would be evicted now, from a saved cluster or the live one; and what
//! `tidal timeline` and `tidal explain` read the same way (the input flags, the policies, the drains
//! due).

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;
use clap::Args;
use jiff::Timestamp;

use super::PacingArgs;
use crate::strategies::tdm::args::TdmArgs;
use crate::{
    api::{self, DeschedulingPolicySpec, GoDuration, PolicyMode, policy::Strategies},
    cluster::{ClusterCache, DrainStart, PolicyInfo, Snapshot, dump::Dump},
    controller,
    drain::{self, ZoneOutlook},
    planner::{self, CyclePlan, Verification},
    report::{Format, Report},
    runtime::{ClientArgs, client},
};

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
    /// Live cluster only: where Prometheus is, for policies that read it.
    #[command(flatten)]
    pub prometheus: crate::runtime::PrometheusArgs,
    /// Live cluster only: check each planned eviction with a server-side dry run (`dryRun=All`) and
    /// list refusals (a PodDisruptionBudget's 429, ...) as skipped, with gate `pdb` and the like.
    #[arg(long, conflicts_with = "clusters")]
    pub verify: bool,
    /// Live cluster only: give up if listing the cluster takes longer.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub timeout: GoDuration,
    /// The instant to plan for (RFC 3339 with its offset, e.g. 2026-11-22T23:30:00Z or
    /// 2026-11-23T00:30:00+01:00). Default: now.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub now: Option<Timestamp>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// The time zone the table and Markdown show times in, stated once at the top: an IANA name
    /// (Europe/Berlin, UTC) or `local` (this machine's). Default: the zones' own when they all share
    /// one, else UTC. JSON and YAML give RFC 3339 instants in UTC whatever it says.
    #[arg(long, value_name = "ZONE", value_parser = parse_time_zone)]
    pub time_zone: Option<jiff::tz::TimeZone>,
    /// Only plan these policies (by name). Default: every DeschedulingPolicy in the input.
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// `report`: list only the pods of this namespace (the plan is still the whole cluster's, as the
    /// controller's is: budgets, zones and limits span namespaces). `explain`: the pod's namespace,
    /// for `explain pod NAME -n NAMESPACE`. As kubectl's `-n`.
    #[arg(short = 'n', long = "namespace", value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Log progress (listing, watches) on stderr; by default only warnings and errors, so that the
    /// report is all a reader sees. kubectl's levels are taken too: `-v`/`-v=1` to `-v=3` progress,
    /// `-v=4` and `-v=5` debug, `-v=6` and more every request's trace.
    #[arg(
        short = 'v',
        long = "verbose",
        alias = "v",
        value_name = "LEVEL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "1"
    )]
    pub verbose: Option<u8>,
    /// The controller's eviction rate and drain margin, which the drain estimates assume: pass what
    /// `tidal run` is given.
    #[command(flatten)]
    pub pacing: PacingArgs,
}

impl ReportArgs {
    /// `-o html` is the timeline's picture; a report or an explanation is read in its table.
    pub(super) fn refuse_html(&self, command: &str) -> anyhow::Result<()> {
        if self.output == Format::Html {
            anyhow::bail!(
                "-o html draws the timeline: run `tidal timeline -o html` (for `tidal {command}`, use \
                 -o table, wide, markdown, json or yaml)"
            );
        }
        Ok(())
    }
}

pub fn report(args: &ReportArgs) -> anyhow::Result<String> {
    args.refuse_html("report")?;
    args.pacing.check()?;
    let mut dump = Dump::load_capped(&args.clusters, args.max_input_size, planner::check_policy)?;
    let (snapshot, outlooks) = start_due_drains(&mut dump.cache, args)?;
    let (cycle, mut notes) = plan_report(&snapshot, args)?;
    notes.extend(nothing_to_plan(&snapshot));
    notes.extend(dump.ignored_note());
    notes.append(&mut dump.warnings);
    render_report(
        &snapshot,
        &cycle,
        &Verification::default(),
        &outlooks,
        notes,
        args,
    )
}

/// What the controller does before a cycle: the drain outlook at the planned instant, and every
/// `auto` drain it says is due noted in the cache, so that the plan sees the zone draining. Returns
/// the snapshot to plan on and the outlook as it then stands.
pub(super) fn start_due_drains(
    cache: &mut ClusterCache,
    args: &ReportArgs,
) -> anyhow::Result<(Snapshot, Vec<ZoneOutlook>)> {
    let now = args.now.unwrap_or_else(Timestamp::now);
    let settings = args.pacing.drain_settings();
    let mut snapshot = cache.snapshot();
    let (policies, _) = select_policies(&snapshot, args)?;
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    let outlooks = plan_drains(cache, &snapshot, &refs, now, &settings);
    let due: Vec<(String, DrainStart)> = outlooks
        .iter()
        .filter(|o| o.start_now)
        .filter_map(|o| {
            Some((
                o.zone.clone(),
                DrainStart {
                    close: o.close?,
                    at: now,
                },
            ))
        })
        .collect();
    if due.is_empty() {
        return Ok((snapshot, outlooks));
    }
    for (zone, start) in &due {
        cache.note_drain_start(zone, *start);
    }
    cache.update_snapshot(&mut snapshot);
    let outlooks = plan_drains(cache, &snapshot, &refs, now, &settings);
    Ok((snapshot, outlooks))
}

/// The drain plan of a one-shot command: what the cluster shows, no queue of its own.
fn plan_drains(
    cache: &ClusterCache,
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    now: Timestamp,
    settings: &drain::DrainSettings,
) -> Vec<ZoneOutlook> {
    let observed = |zone: &str| cache.observed_termination(zone);
    let live = drain::Live {
        observed: &observed,
        ..drain::Live::none()
    };
    drain::plan(snapshot, policies, now, settings, &live)
}

/// How long `tidal report` waits for the API server's first answer before saying it cannot reach it.
pub(super) const REACHABLE_WITHIN: Duration = Duration::from_secs(10);

/// Asks Prometheus, when it is given, the queries the policies read, before planning.
pub(super) async fn ask_prometheus(
    args: &crate::runtime::PrometheusArgs,
    shared: &crate::cluster::SharedCache,
) -> anyhow::Result<()> {
    if let Some(client) = args.client()? {
        crate::runtime::prometheus::poll_once(&client, shared).await;
    }
    Ok(())
}

/// Says once what kube's TLS layer would say on every connection.
pub(super) fn warn_insecure(insecure: bool) {
    if insecure {
        crate::runtime::logs::say(
            "warning: the kubeconfig skips verifying the API server's certificate \
             (insecure-skip-tls-verify)",
        );
    }
}

/// A saved input with no node and no pod (a folder of policies, say): the plan is empty because
/// there is nothing to plan over, which "0 evictions" alone does not say.
fn nothing_to_plan(snapshot: &Snapshot) -> Option<String> {
    (snapshot.nodes.is_empty() && snapshot.pod_count() == 0).then(|| {
        "the input holds no nodes and no pods: nothing was planned over (a saved cluster is what \
         `kubectl get nodes,pods,poddisruptionbudgets,podgroups,revocablezones,deschedulingpolicies \
         -A -o yaml` prints)"
            .to_owned()
    })
}

/// What `report`, `timeline` and `explain` do without a cluster, for the error that finds none.
pub(super) const READ_A_DUMP: &str = ", or --cluster FILE to read a saved dump";

/// `tidal report` against the live cluster: one list of everything, one plan, no eviction; with
/// `--verify`, a server-side dry-run eviction per planned eviction.
pub async fn report_live(args: &ReportArgs) -> anyhow::Result<String> {
    args.refuse_html("report")?;
    args.pacing.check()?;
    let config = args.client.config().await?;
    let insecure = config.accept_invalid_certs;
    let url = config.cluster_url.to_string();
    let evictions = client::without_retries(&config)?;
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let timeout = args.timeout.as_std().max(Duration::from_secs(1));
    client::check_reachable(&client, &url, timeout.min(REACHABLE_WITHIN)).await?;
    warn_insecure(insecure);
    let shared = controller::live_commands::live_cache(client, timeout).await?;
    ask_prometheus(&args.prometheus, &shared).await?;
    let (snapshot, outlooks) = start_due_drains(&mut shared.write(), args)?;
    let (mut cycle, notes) = plan_report(&snapshot, args)?;
    let verification = if args.verify {
        controller::live_commands::verify(evictions, &mut cycle, args.pacing.evictor(), timeout)
            .await
    } else {
        Verification::default()
    };
    render_report(&snapshot, &cycle, &verification, &outlooks, notes, args)
}

fn render_report(
    snapshot: &Snapshot,
    cycle: &CyclePlan,
    verification: &Verification,
    outlooks: &[ZoneOutlook],
    notes: Vec<String>,
    args: &ReportArgs,
) -> anyhow::Result<String> {
    let mut report = Report::from_cycle(cycle).with_verification(verification);
    let (policies, _) = select_policies(snapshot, args)?;
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    report.add_schedule(snapshot, &refs, cycle, outlooks, args.time_zone.as_ref());
    report.warnings.extend(notes);
    if let Some(namespace) = &args.namespace {
        report.keep_namespace(namespace);
    }
    Ok(report.render(args.output))
}

/// Plans the policies `args` selects (or the built-in one) on `snapshot`; returns notes for the report.
pub(super) fn plan_report(
    snapshot: &Snapshot,
    args: &ReportArgs,
) -> anyhow::Result<(CyclePlan, Vec<String>)> {
    let now = args.now.unwrap_or_else(Timestamp::now);
    let (policies, notes) = select_policies(snapshot, args)?;
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    let cycle = planner::plan_all(snapshot, &refs, now);
    Ok((cycle, notes))
}

/// The policies `args` selects from the snapshot, or the built-in one; with notes for the output.
pub(super) fn select_policies(
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

/// An RFC 3339 instant; one without an offset is refused with the two ways to write it, rather than
/// read in some time zone the reader did not choose.
fn parse_instant(text: &str) -> Result<Timestamp, String> {
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    if text.parse::<jiff::civil::DateTime>().is_ok() {
        return Err(format!(
            "{text} has no UTC offset: write {text}Z for UTC, or add the offset of your time zone \
             (e.g. {text}+01:00)"
        ));
    }
    Err(format!(
        "{text} is not an RFC 3339 instant such as 2026-11-22T23:30:00Z"
    ))
}

fn parse_time_zone(text: &str) -> Result<jiff::tz::TimeZone, String> {
    if text == "local" {
        return Ok(jiff::tz::TimeZone::system());
    }
    crate::time_windows::time_zone_named(text).map_err(|e| e.to_string())
}

/// `4Gi`, `500Mi`, `1000000`: a positive Kubernetes quantity of bytes.
fn parse_byte_size(text: &str) -> Result<u64, String> {
    let quantity = k8s_openapi::apimachinery::pkg::api::resource::Quantity(text.to_owned());
    match crate::cluster::model::quantity::value(&quantity) {
        Ok(bytes) if bytes > 0 => Ok(bytes.unsigned_abs()),
        Ok(_) => Err("must be more than 0 bytes".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}

/// Names the policies that exist, and the likely one if the name looks mistyped.
pub(super) fn unknown_policy<'a>(wanted: &str, existing: impl Iterator<Item = &'a str>) -> String {
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
            node_selector: None,
        },
    )
}
