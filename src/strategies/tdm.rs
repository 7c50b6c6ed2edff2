//! Time-division multiplexing: when a revocable zone closes (or is about to), evict the preemptable pods
//! from its nodes, job by job; and evict pods that should never have been placed there at all.

use std::{cmp::Reverse, sync::Arc};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Strategy;
use crate::{
    cluster::{PodInfo, PodPhase, Setting},
    keys,
    plan::{Candidate, PlanContext, ZoneView},
};

pub const NAME: &str = "tdm";

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TdmArgs {
    /// Also evict pods that may not run on revocable nodes at all (not preemptable, or opted into another
    /// zone), whatever the time. They pass the same gates as any other candidate.
    #[serde(default = "yes")]
    pub evict_placement_violations: bool,
}

impl Default for TdmArgs {
    fn default() -> Self {
        TdmArgs {
            evict_placement_violations: true,
        }
    }
}

fn yes() -> bool {
    true
}

pub struct Tdm {
    args: TdmArgs,
}

/// Whether a pod may run on a node of a given zone.
enum Placement {
    /// Preemptable and not opted into a different zone.
    Allowed,
    Violation(String),
    /// Its preemptable setting is unreadable; the `invalid` gate will refuse it with the details.
    Unknown,
}

impl Tdm {
    pub fn new(args: TdmArgs) -> Self {
        Tdm { args }
    }

    fn placement(ctx: &PlanContext<'_>, pod: &PodInfo, zone: &str) -> Placement {
        match ctx.preemptable(pod) {
            Setting::Invalid(_) => Placement::Unknown,
            Setting::Valid(false) | Setting::Unset => Placement::Violation(format!(
                "not preemptable, on a node of revocable zone {zone}"
            )),
            Setting::Valid(true) => match pod.zone_opt_in.as_deref() {
                Some(opted) if opted != "*" && opted != zone => Placement::Violation(format!(
                    "{}={opted} but runs in revocable zone {zone}",
                    keys::REVOCABLE_ZONE
                )),
                _ => Placement::Allowed,
            },
        }
    }

    fn closing_reason(zone: &ZoneView) -> String {
        let Ok(state) = &zone.state else {
            return format!("zone {} closed", zone.name);
        };
        let when = state
            .next_change
            .map(|t| t.to_string())
            .unwrap_or_else(|| "never".to_owned());
        if state.open {
            format!("zone {} closes at {when} (draining)", zone.name)
        } else {
            format!(
                "zone {} closed ({} {}); opens {when}",
                zone.name, zone.schedule, zone.time_zone
            )
        }
    }
}

impl Strategy for Tdm {
    fn name(&self) -> &'static str {
        NAME
    }

    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let mut out = Vec::new();
        for zone in ctx.zones.values() {
            if zone.state.is_err() {
                continue;
            }
            let evicting = zone.evicting_now();
            let mut in_zone: Vec<Candidate> = Vec::new();
            for node in ctx.snapshot.zone_nodes(&zone.name) {
                for pod in node.pods.values() {
                    // DaemonSet and static pods belong to their node; evicting them moves nothing.
                    if pod.phase != PodPhase::Running || ctx.is_leaving(pod) || pod.is_node_bound()
                    {
                        continue;
                    }
                    let candidate = match Self::placement(ctx, pod, &zone.name) {
                        Placement::Allowed if evicting => {
                            Candidate::new(pod, NAME, Self::closing_reason(zone))
                        }
                        Placement::Allowed => continue,
                        Placement::Unknown => Candidate::new(
                            pod,
                            NAME,
                            format!("on revocable zone {}, preemptable unknown", zone.name),
                        ),
                        Placement::Violation(why) => {
                            let candidate =
                                Candidate::new(pod, NAME, format!("placement violation: {why}"));
                            if self.args.evict_placement_violations {
                                candidate
                            } else {
                                candidate.held("evictPlacementViolations is off")
                            }
                        }
                    };
                    in_zone.push(candidate.in_zone(&zone.name));
                }
            }
            in_zone.sort_by(|a, b| victim_order(&a.pod).cmp(&victim_order(&b.pod)));
            out.extend(in_zone);
        }
        out
    }
}

/// Job by job; within a job the least important pod first (lowest priority, then most recently scheduled,
/// which has lost the least work), then by name so that the order never depends on map iteration.
fn victim_order(pod: &Arc<PodInfo>) -> impl Ord + '_ {
    (
        &pod.job,
        pod.priority.unwrap_or(0),
        Reverse(pod.scheduled_at.or(pod.created_at)),
        &pod.key,
    )
}
