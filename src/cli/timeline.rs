//! `tidal timeline`: the next hours, simulated round by round, from a saved cluster or the live one.
//! It reads its input as `tidal report` does.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use clap::Args;
use jiff::{SignedDuration, Timestamp};

use super::report::{REACHABLE_WITHIN, ReportArgs, ask_prometheus, select_policies, warn_insecure};
use crate::{
    api::GoDuration,
    cluster::{ClusterCache, PolicyInfo, dump::Dump},
    controller, planner,
    report::Format,
    runtime::client,
    timeline,
};

#[derive(Debug, Args)]
pub struct TimelineArgs {
    #[command(flatten)]
    pub input: ReportArgs,
    /// How far ahead to simulate (e.g. 24h, 90m, 2d, 7d); at most 7 days.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_span)]
    pub span: GoDuration,
    /// As `tidal run`'s: evictions of strategies other than tdm not sent within this of their cycle's
    /// start are given up until the next cycle (tdm's stay queued until sent).
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub cycle_timeout: GoDuration,
}

impl TimelineArgs {
    /// The controller's pacing and cycle timeout the simulation assumes.
    pub fn settings(&self) -> timeline::Settings {
        timeline::Settings {
            drain: self.input.pacing.drain_settings(),
            cycle_timeout: SignedDuration::try_from(self.cycle_timeout.as_std())
                .unwrap_or(SignedDuration::MAX),
        }
    }

    /// What `tidal timeline` assumes when given no flag: for benchmarks of the simulation.
    pub fn default_settings() -> timeline::Settings {
        use clap::Parser;
        let cli = super::Cli::try_parse_from(["tidal", "timeline"]).expect("the defaults parse");
        match cli.command {
            super::Command::Timeline(args) => args.settings(),
            _ => unreachable!("parsed as the timeline"),
        }
    }
}

/// `tidal timeline` on saved clusters.
pub fn timeline(args: &TimelineArgs) -> anyhow::Result<String> {
    let span = timeline_span(args)?;
    let mut dump = Dump::load_capped(
        &args.input.clusters,
        args.input.max_input_size,
        planner::check_policy,
    )?;
    let snapshot = dump.cache.snapshot();
    let (policies, mut notes) = select_policies(&snapshot, &args.input)?;
    notes.extend(dump.ignored_note());
    notes.append(&mut dump.warnings);
    Ok(render_timeline(
        &mut dump.cache,
        &policies,
        notes,
        span,
        args,
    ))
}

/// `tidal timeline` against the live cluster: one list of everything, then the same simulation.
pub async fn timeline_live(args: &TimelineArgs) -> anyhow::Result<String> {
    let span = timeline_span(args)?;
    let config = args.input.client.config().await?;
    let insecure = config.accept_invalid_certs;
    let url = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let timeout = args.input.timeout.as_std().max(Duration::from_secs(1));
    client::check_reachable(&client, &url, timeout.min(REACHABLE_WITHIN)).await?;
    warn_insecure(insecure);
    let shared = controller::live_commands::live_cache(client, timeout).await?;
    ask_prometheus(&args.input.prometheus, &shared).await?;
    let snapshot = shared.write().snapshot();
    let (policies, notes) = select_policies(&snapshot, &args.input)?;
    let mut cache = shared.write();
    Ok(render_timeline(&mut cache, &policies, notes, span, args))
}

/// The span, checked along with the flags `report` has that the timeline cannot honour.
fn timeline_span(args: &TimelineArgs) -> anyhow::Result<SignedDuration> {
    args.input.pacing.check()?;
    if args.input.verify {
        anyhow::bail!(
            "--verify checks one plan against the API server; the timeline has no use for it"
        );
    }
    if args.input.namespace.is_some() {
        anyhow::bail!(
            "-n lists one namespace's pods in `tidal report` and names the pod's in `tidal explain`; \
             the timeline's rounds drain zones across namespaces (`-o wide` lists every pod)"
        );
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
    args: &TimelineArgs,
) -> String {
    let input = &args.input;
    let now = input.now.unwrap_or_else(Timestamp::now);
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    let mut timeline = timeline::simulate(cache, &refs, now, span, &args.settings());
    timeline.show_in(input.time_zone.as_ref());
    timeline.warnings.extend(notes);
    match input.output {
        Format::Json => timeline.to_json(),
        Format::Yaml => timeline.to_yaml(),
        Format::Wide => timeline.to_wide_table(),
        Format::Table => timeline.to_table_for(crate::text::columns::Layout::for_stdout()),
        Format::Markdown => timeline.to_markdown(),
        Format::Html => timeline.to_html(),
    }
}

/// A Go duration, or one in days as people write a span (`7d`, `2d12h`: humantime's units).
fn parse_span(text: &str) -> Result<GoDuration, String> {
    text.parse::<GoDuration>().or_else(|go| {
        humantime::parse_duration(text)
            .map(GoDuration)
            .map_err(|_| format!("{go}; or days, such as 2d or 7d"))
    })
}
