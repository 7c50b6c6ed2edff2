//! `tidal explain pod NAMESPACE/NAME`: for one pod, every policy and strategy that considered it, the
//! gate that stopped it or the round that will take it, and when, as sentences a person reads; for a
//! pod not on a node yet, the revocable zones admission keeps it off because they close first.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use super::report::{REACHABLE_WITHIN, ReportArgs, plan_report, select_policies, start_due_drains};
use crate::{
    cluster::{ObjectKey, PodInfo, PolicyInfo, Snapshot, dump::Dump},
    controller,
    drain::ZoneOutlook,
    planner::{self, CyclePlan},
    report::{Format, Report, StrategyLine},
    runtime::client,
    text::{WIDTH, wrap},
};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// What to explain: `pod NAMESPACE/NAME`, `pod NAME -n NAMESPACE`, or kubectl's `pod/NAME`.
    #[arg(value_name = "pod")]
    pub kind: String,
    /// The pod: `NAMESPACE/NAME`, or `NAME` with `-n NAMESPACE` (`default` without it, as kubectl).
    #[arg(value_name = "NAMESPACE/NAME")]
    pub target: Option<String>,
    #[command(flatten)]
    pub input: ReportArgs,
}

/// The explanation, for machines (`-o json`): one verdict per policy.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub pod: String,
    pub node: Option<String>,
    pub now: String,
    pub policies: Vec<Verdict>,
    /// Why admission keeps the pod, not yet on a node, off revocable zones it would otherwise take:
    /// one sentence per zone that closes before the pod could finish there, or why none may take it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub admission: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub policy: String,
    pub mode: String,
    /// `evict`, `skipped`, `waiting` (a later round takes it: `evictPeriod` or its job's budget
    /// holds it this round only), `notProposed` or `error`.
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// RFC 3339, UTC: when the round that may take it starts, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_round: Option<String>,
    /// The explanation, as a person reads it.
    pub sentence: String,
}

/// The pod `explain` names, as kubectl takes it: `pod NAMESPACE/NAME`, `pod NAME -n NAMESPACE`,
/// `pod/NAME -n NAMESPACE`, `pod/NAMESPACE/NAME`; `pods` and `po` as kubectl's short names.
fn pod_key(args: &ExplainArgs) -> anyhow::Result<ObjectKey> {
    let (kind, inline) = match args.kind.split_once('/') {
        Some((kind, name)) => (kind, Some(name)),
        None => (args.kind.as_str(), None),
    };
    if !matches!(kind, "pod" | "pods" | "po") {
        anyhow::bail!("tidal explains pods: `tidal explain pod NAMESPACE/NAME` (not {kind:?})");
    }
    let target = match (inline, args.target.as_deref()) {
        (Some(_), Some(extra)) => {
            anyhow::bail!(
                "{}: one pod at a time ({extra:?} is one too many)",
                args.kind
            )
        }
        (Some(name), None) | (None, Some(name)) => name,
        (None, None) => anyhow::bail!(
            "which pod? `tidal explain pod NAMESPACE/NAME` or `tidal explain pod NAME -n NAMESPACE`"
        ),
    };
    let (namespace, name) = match (target.split_once('/'), &args.input.namespace) {
        (Some((namespace, _)), Some(flag)) if namespace != flag => anyhow::bail!(
            "{target:?} names namespace {namespace:?}, -n says {flag:?}: give one of them"
        ),
        (Some((namespace, name)), _) => (namespace, name),
        (None, Some(namespace)) => (namespace.as_str(), target),
        (None, None) => ("default", target),
    };
    if namespace.is_empty() || name.is_empty() || name.contains('/') {
        anyhow::bail!(
            "{target:?}: name the pod as NAMESPACE/NAME, e.g. batch/etl-0, or NAME -n NAMESPACE"
        );
    }
    Ok(ObjectKey::new(namespace, name))
}

/// `tidal explain` on saved clusters.
pub(crate) fn explain(args: &ExplainArgs) -> anyhow::Result<String> {
    let key = pod_key(args)?;
    let input = &args.input;
    input.refuse_html("explain")?;
    let mut dump = Dump::load_capped(&input.clusters, input.max_input_size, planner::check_policy)?;
    // Drains due by now are started, as the report does, so that both tell the same story.
    let (snapshot, outlooks) = start_due_drains(&mut dump.cache, input)?;
    let (cycle, _) = plan_report(&snapshot, input)?;
    dump.warnings.clear();
    render(&snapshot, &cycle, &outlooks, &key, input)
}

/// `tidal explain` against the live cluster.
pub(crate) async fn explain_live(args: &ExplainArgs) -> anyhow::Result<String> {
    let key = pod_key(args)?;
    let input = &args.input;
    input.refuse_html("explain")?;
    let config = input.client.config().await?;
    let insecure = config.accept_invalid_certs;
    let url = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let timeout = input.timeout.as_std().max(Duration::from_secs(1));
    client::check_reachable(&client, &url, timeout.min(REACHABLE_WITHIN)).await?;
    super::report::warn_insecure(insecure);
    let shared = controller::live_commands::live_cache(client, timeout).await?;
    super::report::ask_prometheus(&input.prometheus, &shared).await?;
    let (snapshot, outlooks) = start_due_drains(&mut shared.write(), input)?;
    let (cycle, _) = plan_report(&snapshot, input)?;
    render(&snapshot, &cycle, &outlooks, &key, input)
}

fn render(
    snapshot: &Snapshot,
    cycle: &CyclePlan,
    outlooks: &[ZoneOutlook],
    key: &ObjectKey,
    args: &ReportArgs,
) -> anyhow::Result<String> {
    let Some(pod) = snapshot.pods().find(|p| p.key == *key).cloned() else {
        let names = snapshot
            .pods()
            .filter(|p| p.key.namespace == key.namespace)
            .map(|p| p.key.name.as_str());
        // The name in other namespaces first (a forgotten `-n`), then a near name in this one.
        let elsewhere: Vec<String> = snapshot
            .pods()
            .filter(|p| p.key.name == key.name)
            .map(|p| p.key.to_string())
            .take(3)
            .collect();
        let hint = if !elsewhere.is_empty() {
            format!("; it is in {} (-n NAMESPACE)", elsewhere.join(", "))
        } else {
            crate::api::validation::did_you_mean(&key.name, names).map_or(String::new(), |n| {
                format!("; did you mean {}/{n}?", key.namespace)
            })
        };
        anyhow::bail!("no pod {key} in the input{hint}");
    };
    let (policies, _) = select_policies(snapshot, args)?;
    let mut report = Report::from_cycle(cycle);
    let refs: Vec<&PolicyInfo> = policies.iter().map(AsRef::as_ref).collect();
    report.add_schedule(snapshot, &refs, cycle, outlooks, args.time_zone.as_ref());
    let mut explanation = explain_pod(snapshot, cycle, &report, &policies, &pod);
    // Sentences are for people: their instants in the output's one time zone.
    for verdict in &mut explanation.policies {
        verdict.sentence = report.clock.text(&verdict.sentence);
    }
    for sentence in &mut explanation.admission {
        *sentence = report.clock.text(sentence);
    }
    Ok(match args.output {
        Format::Json => serde_json::to_string_pretty(&explanation)? + "\n",
        Format::Yaml => serde_saphyr::to_string(&explanation)?,
        Format::Wide => {
            sentences(&explanation, &report.clock, cycle.now)
                + &details(
                    snapshot,
                    cycle,
                    &policies,
                    &pod,
                    &explanation,
                    &report.clock,
                )
        }
        Format::Table | Format::Markdown | Format::Html => {
            sentences(&explanation, &report.clock, cycle.now)
        }
    })
}

/// `-o wide`: the facts about the pod the sentences rest on (node and zone, owner and job, phase,
/// priority, times), and per policy its verdict in fields and every gate that would stop the pod,
/// with its reason.
fn details(
    snapshot: &Snapshot,
    cycle: &CyclePlan,
    policies: &[std::sync::Arc<PolicyInfo>],
    pod: &std::sync::Arc<PodInfo>,
    explanation: &Explanation,
    clock: &crate::text::clock::Clock,
) -> String {
    let node = pod.node_name.as_deref();
    let zone = snapshot
        .nodes
        .values()
        .filter_map(|s| s.node.as_deref())
        .find(|n| Some(n.name.as_str()) == node)
        .and_then(|n| n.revocable_zone.clone());
    let owner = pod
        .owner
        .as_deref()
        .map_or("none (a bare pod)".to_owned(), |o| {
            format!("{} {}", o.kind, o.name)
        });
    let at = |t: Option<jiff::Timestamp>| t.map_or("-".to_owned(), |t| clock.instant(t));
    let mut out = String::from("\nDETAILS\n");
    for (field, value) in [
        ("node", node.unwrap_or("-").to_owned()),
        ("zone", zone.unwrap_or_else(|| "-".to_owned())),
        ("owner", owner),
        ("job", pod.job.to_string()),
        ("phase", format!("{:?}", pod.phase)),
        (
            "priority",
            match (&pod.priority, pod.priority_class_name.as_deref()) {
                (Some(p), Some(class)) => format!("{p} ({class})"),
                (Some(p), None) => p.to_string(),
                (None, Some(class)) => format!("- ({class})"),
                (None, None) => "-".to_owned(),
            },
        ),
        ("created", at(pod.created_at)),
        ("scheduled", at(pod.scheduled_at)),
    ] {
        out.push_str(&format!("{field:<10} {value}\n"));
    }
    for verdict in &explanation.policies {
        out.push_str(&format!(
            "\npolicy {} ({}): {}, strategy {}, gate {}, next round {}\n",
            verdict.policy,
            verdict.mode,
            verdict.outcome,
            verdict.strategy.as_deref().unwrap_or("-"),
            verdict.gate.as_deref().unwrap_or("-"),
            verdict.next_round.as_deref().unwrap_or("-"),
        ));
        let Some(info) = policies.iter().find(|p| p.name == verdict.policy) else {
            continue;
        };
        let obstacles = planner::obstacles(snapshot, info, pod, cycle.now);
        if obstacles.is_empty() {
            out.push_str("  no protection gate would stop it\n");
        }
        for (gate, why) in obstacles {
            out.push_str(&format!("  gate {gate}: {}\n", clock.text(&why)));
        }
    }
    out
}

fn sentences(
    explanation: &Explanation,
    clock: &crate::text::clock::Clock,
    now: jiff::Timestamp,
) -> String {
    // A page's width, or the terminal's where it is narrower.
    let width = crate::text::columns::Layout::for_stdout()
        .width()
        .map_or(WIDTH, |w| w.min(WIDTH));
    let mut out = format!(
        "pod {} on {} at {}, {}\n",
        explanation.pod,
        explanation.node.as_deref().unwrap_or("no node"),
        clock.instant(now),
        clock.stated()
    );
    for verdict in &explanation.policies {
        out.push('\n');
        out.push_str(&wrap(&format!("- {}", verdict.sentence), width, "  "));
    }
    for sentence in &explanation.admission {
        out.push('\n');
        out.push_str(&wrap(&format!("- {sentence}"), width, "  "));
    }
    out
}

/// What the webhook's rule 4 says of `pod` at `now`, for a pod not on a node yet (a pod on a node
/// was admitted already): the zones it is kept off because they close before it could finish there,
/// as the mutation excludes them and the binding check denies them.
fn admission_sentences(snapshot: &Snapshot, pod: &PodInfo, now: jiff::Timestamp) -> Vec<String> {
    use crate::cluster::rules::placement::{
        Preemptable, is_exempt, preemptable, zones_closing_first,
    };
    if pod.node_name.is_some() || is_exempt(pod) {
        return Vec::new();
    }
    let group = snapshot.podgroup_of(pod);
    if preemptable(pod, group) != Preemptable::Yes {
        return Vec::new();
    }
    match zones_closing_first(pod, group, snapshot.zones.values().map(AsRef::as_ref), now) {
        Ok(closing) => closing
            .iter()
            .map(|closes| {
                format!(
                    "Admission keeps it off revocable zone {}: it {closes}. The webhook gives it a \
                     required node affinity against the zone at creation and refuses its binding to \
                     the zone's nodes.",
                    closes.zone
                )
            })
            .collect(),
        Err(invalid) => vec![format!(
            "Admission keeps it off every revocable zone: {invalid}. tidal cannot tell when it ends \
             and would never evict it, so no zone's drain could let it go."
        )],
    }
}

fn explain_pod(
    snapshot: &Snapshot,
    cycle: &CyclePlan,
    report: &Report,
    policies: &[Arc<PolicyInfo>],
    pod: &Arc<PodInfo>,
) -> Explanation {
    let (namespace, name) = (pod.key.namespace.as_str(), pod.key.name.as_str());
    let is_pod = |ns: &str, n: &str| ns == namespace && n == name;
    let mut verdicts = Vec::new();
    for plan in &cycle.plans {
        let mode = format!("{:?}", plan.mode);
        let policy = plan.policy.clone();
        let head = format!("Policy {policy} ({mode})");
        if let Some(error) = &plan.error {
            verdicts.push(Verdict {
                policy,
                mode,
                outcome: "error",
                strategy: None,
                gate: None,
                next_round: None,
                sentence: format!("{head} did not run: {error}."),
            });
            continue;
        }
        let verb = if plan.mode == crate::api::PolicyMode::DryRun {
            "would evict it now (DryRun: planned, never sent)"
        } else {
            "evicts it now"
        };
        if let Some(e) = report
            .evictions
            .iter()
            .find(|e| e.policy == policy && is_pod(&e.namespace, &e.name))
        {
            verdicts.push(Verdict {
                policy,
                mode,
                outcome: "evict",
                strategy: Some(e.strategy.clone()),
                gate: None,
                next_round: None,
                sentence: format!("{head} {verb}, for {}: {}.", e.strategy, e.reason),
            });
            continue;
        }
        if let Some(s) = report
            .skipped
            .iter()
            .find(|s| s.policy == policy && is_pod(&s.namespace, &s.name))
        {
            let stop = if s.gate == "budget" && s.waiting {
                format!("its job's budget holds it this round ({})", s.detail)
            } else if s.gate == "budget" {
                format!("its job's budget holds it ({})", s.detail)
            } else if s.gate == "policy" {
                format!("the strategy's own arguments hold it back ({})", s.detail)
            } else {
                format!("gate {} stops it: {}", s.gate, s.detail)
            };
            let when = match &s.next_round_shown {
                Some(w) if s.waiting => format!("; it {w}"),
                Some(w) => format!("; {w}"),
                None => String::new(),
            };
            verdicts.push(Verdict {
                policy,
                mode,
                // Held by its job's budget this round only: a later round takes it.
                outcome: if s.waiting { "waiting" } else { "skipped" },
                strategy: Some(s.strategy.clone()),
                gate: Some(s.gate.clone()),
                next_round: s.next_round.clone(),
                sentence: format!(
                    "{head}: {} wants it out ({}), but {stop}{when}.",
                    s.strategy, s.reason
                ),
            });
            continue;
        }
        if let Some(w) = report
            .waiting
            .iter()
            .find(|w| w.policy == policy && is_pod(&w.namespace, &w.name))
        {
            verdicts.push(Verdict {
                policy,
                mode,
                outcome: "waiting",
                strategy: Some("tdm".to_owned()),
                gate: None,
                next_round: Some(w.next_round.clone()),
                sentence: format!(
                    "{head} takes it in zone {}'s next round, {} (evictPeriod holds the round \
                     until then): {}.",
                    w.zone, w.next_round_shown, w.reason
                ),
            });
            continue;
        }
        let strategies: Vec<&StrategyLine> = report
            .strategies
            .iter()
            .filter(|s| s.policy == policy)
            .collect();
        let names: Vec<&str> = strategies.iter().map(|s| s.strategy.as_str()).collect();
        let mut sentence = format!(
            "{head}: none of its strategies ({}) proposes it.",
            names.join(", ")
        );
        // A finished pod holds nothing: only the strategies that clean up finished pods take it.
        if pod.phase.is_finished() {
            sentence.push_str(&format!(
                " It has finished ({:?}) and holds nothing on its node.",
                pod.phase
            ));
        }
        if let Some(info) = policies.iter().find(|p| p.name == policy) {
            let obstacles = planner::obstacles(snapshot, info, pod, cycle.now);
            if obstacles.is_empty() {
                sentence.push_str(" Were one to, no gate would stop it.");
            } else {
                let said: Vec<String> = obstacles
                    .iter()
                    .map(|(gate, why)| {
                        if gate == "scope" {
                            why.clone()
                        } else {
                            format!("gate {gate}: {why}")
                        }
                    })
                    .collect();
                sentence.push_str(&format!(
                    " Were one to, it would not go: {}.",
                    said.join("; ")
                ));
            }
        }
        for line in strategies.iter().filter(|s| s.saw.is_some()) {
            sentence.push_str(&format!(
                " {} saw {}.",
                line.strategy,
                line.saw.as_deref().unwrap_or_default()
            ));
        }
        verdicts.push(Verdict {
            policy,
            mode,
            outcome: "notProposed",
            strategy: None,
            gate: None,
            next_round: None,
            sentence,
        });
    }
    Explanation {
        pod: pod.key.to_string(),
        node: pod.node_name.as_deref().map(String::from),
        now: cycle.now.to_string(),
        policies: verdicts,
        admission: admission_sentences(snapshot, pod, cycle.now),
    }
}
