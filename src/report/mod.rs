//! The report: what a cycle would evict and why, for people (table, markdown) and machines (JSON).
//!
//! The JSON form is a stable interface: fields are only ever added. Documented in README.md.

pub mod dump;
mod markdown;
mod table;

use serde::Serialize;

use crate::{
    cluster::ObjectKey,
    framework::Candidate,
    planner::{CyclePlan, Verification},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub now: String,
    pub policies: Vec<PolicyLine>,
    pub zones: Vec<ZoneLine>,
    pub evictions: Vec<EvictionLine>,
    pub skipped: Vec<SkippedLine>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyLine {
    pub name: String,
    pub mode: String,
    pub evictions: usize,
    pub skipped: usize,
    /// With `--verify`: planned evictions a server-side dry run accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<usize>,
    /// With `--verify`: planned evictions not checked in time (still planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unverified: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneLine {
    pub name: String,
    /// `null` when the zone's windows could not be read.
    pub open: Option<bool>,
    pub draining: bool,
    pub next_change: Option<String>,
    pub windows: String,
    pub time_zone: String,
    pub nodes: usize,
    /// When the zone's next eviction round may start, if `evictPeriod` has not passed yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_round: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictionLine {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub strategy: String,
    pub reason: String,
    pub policy: String,
    pub job: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// With `--verify`: whether a server-side dry run accepted it (`false`: not checked in time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedLine {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub strategy: String,
    pub gate: String,
    pub detail: String,
    pub policy: String,
    /// What the strategy wanted to evict the pod for.
    pub reason: String,
}

impl Report {
    pub fn from_cycle(cycle: &CyclePlan) -> Report {
        let mut report = Report {
            now: cycle.now.to_string(),
            policies: Vec::new(),
            zones: Vec::new(),
            evictions: Vec::new(),
            skipped: Vec::new(),
            warnings: cycle.warnings.clone(),
        };
        for zone in cycle.zones.values() {
            let (open, draining, next_change, error) = match &zone.state {
                Ok(state) => (
                    Some(state.open),
                    state.draining,
                    state.next_change.map(|t| t.to_string()),
                    None,
                ),
                Err(error) => (None, false, None, Some(error.clone())),
            };
            report.zones.push(ZoneLine {
                name: zone.name.clone(),
                open,
                draining,
                next_change,
                windows: zone.schedule.clone(),
                time_zone: zone.time_zone.clone(),
                nodes: zone.nodes,
                next_round: zone.next_round.map(|t| t.to_string()),
                error,
            });
        }
        for plan in &cycle.plans {
            report.policies.push(PolicyLine {
                name: plan.policy.clone(),
                mode: format!("{:?}", plan.mode),
                evictions: plan.evictions.len(),
                // Every skip counted, listed or not (the report lists all; a capped plan says so).
                skipped: plan.skip_counts.values().map(|n| *n as usize).sum(),
                verified: None,
                unverified: None,
                error: plan.error.clone(),
            });
            if let Some(error) = &plan.error {
                report
                    .warnings
                    .push(format!("policy {} did not run: {error}", plan.policy));
            }
            for eviction in &plan.evictions {
                let c = &eviction.candidate;
                report.evictions.push(EvictionLine {
                    namespace: c.pod.key.namespace.clone(),
                    name: c.pod.key.name.clone(),
                    node: c.pod.node_name.clone(),
                    strategy: c.strategy.to_string(),
                    reason: c.reason.clone(),
                    policy: plan.policy.clone(),
                    job: c.pod.job.to_string(),
                    zone: c.zone.clone(),
                    verified: None,
                });
            }
            for skip in &plan.skipped {
                let Candidate {
                    pod,
                    strategy,
                    reason,
                    ..
                } = &skip.candidate;
                report.skipped.push(SkippedLine {
                    namespace: pod.key.namespace.clone(),
                    name: pod.key.name.clone(),
                    node: pod.node_name.clone(),
                    strategy: strategy.to_string(),
                    gate: skip.reason.to_string(),
                    detail: skip.detail.clone(),
                    policy: plan.policy.clone(),
                    reason: reason.clone(),
                });
            }
        }
        report
    }

    /// Marks what `--verify` checked: counts on each policy, `verified` on each eviction.
    pub fn with_verification(mut self, verification: &Verification) -> Report {
        for policy in &mut self.policies {
            let Some(v) = verification.policies.get(&policy.name) else {
                continue;
            };
            policy.verified = Some(v.accepted);
            policy.unverified = Some(v.unverified.len());
        }
        for eviction in &mut self.evictions {
            let Some(v) = verification.policies.get(&eviction.policy) else {
                continue;
            };
            let key = ObjectKey::new(&eviction.namespace, &eviction.name);
            eviction.verified = Some(!v.unverified.contains(&key));
        }
        self
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => {
                let mut json =
                    serde_json::to_string_pretty(self).expect("the report is plain data");
                json.push('\n');
                json
            }
            Format::Table => table::render(self),
            Format::Markdown => markdown::render(self),
        }
    }

    /// `3 evictions planned, 2 skipped (budget 1, cooldown 1); zones: 1 of 2 closed`.
    pub fn summary(&self) -> String {
        let mut by_gate = std::collections::BTreeMap::<&str, usize>::new();
        for skip in &self.skipped {
            *by_gate.entry(skip.gate.as_str()).or_default() += 1;
        }
        let gates = if by_gate.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = by_gate.iter().map(|(g, n)| format!("{g} {n}")).collect();
            format!(" ({})", parts.join(", "))
        };
        let closed = self.zones.iter().filter(|z| z.open == Some(false)).count();
        let draining = self.zones.iter().filter(|z| z.draining).count();
        let mut zones = format!("{closed} of {} zones closed", self.zones.len());
        if draining > 0 {
            zones.push_str(&format!(", {draining} draining"));
        }
        let checked = self.evictions.iter().filter_map(|e| e.verified);
        let (verified, unverified) =
            checked.fold(
                (0, 0),
                |(yes, no), v| {
                    if v { (yes + 1, no) } else { (yes, no + 1) }
                },
            );
        let verification = if verified + unverified > 0 {
            format!(" ({verified} verified by a dry run, {unverified} not checked in time)")
        } else {
            String::new()
        };
        format!(
            "{} eviction{} planned{verification}, {} skipped{gates}; {zones}",
            self.evictions.len(),
            if self.evictions.len() == 1 { "" } else { "s" },
            self.skipped.len(),
        )
    }
}

/// `ns/name`, the way kubectl users read pods.
fn pod_ref(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn zone_state(zone: &ZoneLine) -> &'static str {
    match (zone.open, zone.draining) {
        (None, _) => "invalid",
        (Some(true), true) => "draining",
        (Some(true), false) => "open",
        (Some(false), _) => "closed",
    }
}
